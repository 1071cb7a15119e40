import { Writable } from 'node:stream';
import pino from 'pino';
import { startNatsServer } from '../../../test/support/nats-server';
import { connectNats, Delivery, ensureStream, heartbeatIntervalMs, JETSTREAM_ACK_WAIT_MS, NatsConnection, publishEvent, runConsumer } from './nats';

jest.setTimeout(60_000);

/** A real pino logger whose JSON lines are kept in `lines`. */
function capturingLogger() {
  const lines: any[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const ACK_WAIT_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * runConsumer's redelivery setting against a real nats-server, with a short ack wait (2 s, heartbeat
 * every 400 ms) to keep the test short: a slow but alive handler is never redelivered, a worker
 * that disappears mid-job has its work taken over by another one, a blocked event loop is logged.
 */
describe('runConsumer: ack wait and heartbeats', () => {
  let server: { url: string; stop: () => Promise<void> };
  const connections: NatsConnection[] = [];
  let n = 0;

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    for (const nc of connections) if (!nc.isClosed()) await nc.close();
    await server.stop();
  });

  async function setup() {
    n += 1;
    const nc = await connectNats(server.url, `spec-${n}`, 5000);
    connections.push(nc);
    const stream = `SPEC_${n}`;
    const subject = `spec.${n}.work`;
    await ensureStream(nc, stream, [subject]);
    return { nc, stream, subject, durable: `worker-${n}` };
  }

  it('defaults to a 10 s ack wait with a heartbeat every 2 s', () => {
    expect(JETSTREAM_ACK_WAIT_MS).toBe(10_000);
    expect(heartbeatIntervalMs(JETSTREAM_ACK_WAIT_MS)).toBe(2000);
    expect(heartbeatIntervalMs(ACK_WAIT_MS)).toBe(400);
    expect(heartbeatIntervalMs(100)).toBe(250);
  });

  it('never redelivers a slow but alive step (3.5 × the ack wait)', async () => {
    const { nc, stream, subject, durable } = await setup();
    const { logger } = capturingLogger();
    const deliveries: Delivery[] = [];
    const consumer = await runConsumer<{ id: string }>(nc, {
      stream,
      durable,
      filterSubject: subject,
      ackWaitMs: ACK_WAIT_MS,
      maxDeliver: 5,
      concurrency: 1,
      logger,
      handler: async (_payload, delivery) => {
        deliveries.push(delivery);
        await sleep(3.5 * ACK_WAIT_MS);
      },
    });
    await publishEvent(nc, subject, { id: 'slow' }, 'slow');
    while (deliveries.length === 0) await sleep(50);
    // Past the slow step and two more ack waits: a redelivery would have come by now.
    await sleep(3.5 * ACK_WAIT_MS + 2 * ACK_WAIT_MS);
    await consumer.stop();
    expect(deliveries.map((d) => d.attempt)).toEqual([1]);
  });

  it('never redelivers a message waiting for a free slot (6 slow messages, 2 slots)', async () => {
    const { nc, stream, subject, durable } = await setup();
    const deliveries: Array<[string, number]> = [];
    const consumer = await runConsumer<{ id: string }>(nc, {
      stream,
      durable,
      filterSubject: subject,
      ackWaitMs: ACK_WAIT_MS,
      maxDeliver: 5,
      concurrency: 2,
      logger: capturingLogger().logger,
      handler: async (payload, delivery) => {
        deliveries.push([payload.id, delivery.attempt]);
        await sleep(2 * ACK_WAIT_MS);
      },
    });
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const id of ids) await publishEvent(nc, subject, { id }, id);
    while (deliveries.length < ids.length) await sleep(50);
    // Past the last one and two more ack waits: a redelivery would have come by now.
    await sleep(2 * ACK_WAIT_MS + 2 * ACK_WAIT_MS);
    await consumer.stop();
    expect(deliveries.sort()).toEqual(ids.map((id) => [id, 1]));
  });

  it('hands the work of a worker that died mid-job to another worker, once', async () => {
    const { nc: first, stream, subject, durable } = await setup();
    const options = { stream, durable, filterSubject: subject, ackWaitMs: ACK_WAIT_MS, maxDeliver: 5, concurrency: 1, logger: capturingLogger().logger };
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    let started = false;
    const dead = await runConsumer<{ id: string }>(first, {
      ...options,
      handler: async () => {
        started = true;
        await stuck;
      },
    });
    await publishEvent(first, subject, { id: 'job' }, 'job');
    while (!started) await sleep(20);
    // The worker dies: its connection goes away without an ack, its heartbeats stop.
    const diedAt = Date.now();
    await first.close();
    const second = (await setup()).nc;
    const taken: Array<{ attempt: number; at: number }> = [];
    const consumer = await runConsumer<{ id: string }>(second, {
      ...options,
      handler: async (_payload, delivery) => {
        taken.push({ attempt: delivery.attempt, at: Date.now() });
      },
    });
    while (taken.length === 0) await sleep(20);
    await sleep(2 * ACK_WAIT_MS);
    await consumer.stop();
    release();
    await dead.stop();
    expect(taken.map((t) => t.attempt)).toEqual([2]);
    console.log(`takeover pause with a ${ACK_WAIT_MS} ms ack wait: ${taken[0].at - diedAt} ms`);
  });

  it('logs an event loop blocked past half the ack wait', async () => {
    const { nc, stream, subject, durable } = await setup();
    const { logger, lines } = capturingLogger();
    let done = false;
    const consumer = await runConsumer<{ id: string }>(nc, {
      stream,
      durable,
      filterSubject: subject,
      ackWaitMs: ACK_WAIT_MS,
      maxDeliver: 5,
      concurrency: 1,
      logger,
      handler: async () => {
        await sleep(400);
        const until = Date.now() + 0.7 * ACK_WAIT_MS;
        while (Date.now() < until); // CPU-bound work that does not yield
        await sleep(400);
        done = true;
      },
    });
    await publishEvent(nc, subject, { id: 'busy' }, 'busy');
    while (!done) await sleep(20);
    await consumer.stop();
    const late = lines.filter((l) => /heartbeat late/.test(l.msg));
    expect(late).toHaveLength(1);
    expect(late[0]).toMatchObject({ consumer: durable, ack_wait_ms: ACK_WAIT_MS, in_flight: 1 });
    expect(late[0].gap_ms).toBeGreaterThan(ACK_WAIT_MS / 2);
  });
});
