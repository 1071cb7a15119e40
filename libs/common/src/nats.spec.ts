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

  /**
   * A fresh connection, stream and subject, and the consumer options the cases share (the short ack
   * wait, 5 deliveries, one slot, a capturing logger whose JSON lines are in `lines`).
   */
  async function setup() {
    n += 1;
    const nc = await connectNats(server.url, `spec-${n}`, 5000);
    connections.push(nc);
    const stream = `SPEC_${n}`;
    const subject = `spec.${n}.work`;
    await ensureStream(nc, stream, [subject]);
    const durable = `worker-${n}`;
    const { logger, lines } = capturingLogger();
    const options = { stream, durable, filterSubject: subject, ackWaitMs: ACK_WAIT_MS, maxDeliver: 5, concurrency: 1, logger };
    return { nc, subject, durable, lines, options };
  }

  it('defaults to a 10 s ack wait with a heartbeat every 2 s', () => {
    expect(JETSTREAM_ACK_WAIT_MS).toBe(10_000);
    expect(heartbeatIntervalMs(JETSTREAM_ACK_WAIT_MS)).toBe(2000);
    expect(heartbeatIntervalMs(ACK_WAIT_MS)).toBe(400);
    expect(heartbeatIntervalMs(100)).toBe(250);
  });

  it('never redelivers a slow but alive step (3.5 × the ack wait)', async () => {
    const { nc, subject, options } = await setup();
    const deliveries: Delivery[] = [];
    const consumer = await runConsumer<{ id: string }>(nc, {
      ...options,
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
    const { nc, subject, options } = await setup();
    const deliveries: Array<[string, number]> = [];
    const consumer = await runConsumer<{ id: string }>(nc, {
      ...options,
      concurrency: 2,
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
    const { nc: first, subject, options } = await setup();
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
    const { nc, subject, durable, lines, options } = await setup();
    let done = false;
    const consumer = await runConsumer<{ id: string }>(nc, {
      ...options,
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

  /**
   * singleFlightKey: the same stream message delivered twice at once (here: the first run blocks
   * the event loop past the ack wait, so JetStream redelivers it to the other free slot, the way a
   * redelivery raced a live delivery in the four-kill e2e case) never runs the handler twice at once.
   */
  async function duplicateDelivery(firstRun: 'succeeds' | 'fails') {
    const ackWaitMs = 1000; // shorter than the other cases': this one waits for a redelivery
    const { nc, subject, lines, options } = await setup();
    const runs: Array<{ attempt: number; start: number; end: number }> = [];
    let running = 0;
    let overlapped = false;
    const consumer = await runConsumer<{ id: string }>(nc, {
      ...options,
      ackWaitMs,
      concurrency: 2,
      retryDelayMs: 20 * ackWaitMs, // a nak's own redelivery comes after the test
      singleFlightKey: (payload) => payload.id,
      handler: async (_payload, delivery) => {
        overlapped ||= running > 0;
        running += 1;
        const run = { attempt: delivery.attempt, start: Date.now(), end: 0 };
        runs.push(run);
        try {
          if (runs.length === 1) {
            const until = Date.now() + 1.3 * ackWaitMs;
            while (Date.now() < until); // no heartbeat: JetStream redelivers to the other slot
            await sleep(ackWaitMs); // still running when the redelivery arrives
            if (firstRun === 'fails') throw new Error('first run failed');
          }
        } finally {
          run.end = Date.now();
          running -= 1;
        }
      },
    });
    await publishEvent(nc, subject, { id: 'doc-1' }, 'doc-1');
    while (runs.length === 0 || runs[0].end === 0) await sleep(20);
    // Past the waiting delivery's settling and another ack wait: any further delivery would be here.
    await sleep(2 * ackWaitMs);
    await consumer.stop();
    const msgs = lines.filter((l) => /duplicate delivery/.test(l.msg));
    return { runs, overlapped, msgs };
  }

  it('singleFlightKey: a duplicate delivery of work in progress waits, then is acknowledged without a second run', async () => {
    const { runs, overlapped, msgs } = await duplicateDelivery('succeeds');
    expect(msgs[0]).toMatchObject({ key: 'doc-1', attempt: 2, msg: 'duplicate delivery: waiting for the run of the same work in progress' });
    expect(msgs[0].stream_seq).toBe(msgs[0].running_stream_seq); // the same stream message
    expect(msgs.at(-1)!.msg).toBe('duplicate delivery acknowledged: the same work already succeeded');
    expect(runs.map((r) => r.attempt)).toEqual([1]);
    expect(overlapped).toBe(false);
  });

  it('singleFlightKey: a duplicate delivery runs after the run in progress failed, never beside it', async () => {
    const { runs, overlapped, msgs } = await duplicateDelivery('fails');
    expect(msgs.map((m) => m.msg)).toEqual(['duplicate delivery: waiting for the run of the same work in progress']);
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(runs[1].start).toBeGreaterThanOrEqual(runs[0].end);
    expect(overlapped).toBe(false);
  });

  it('releaseSlot: the slot takes the next message while the released run finishes, heartbeated, and stop() waits for it', async () => {
    const { nc, subject, options } = await setup();
    const events: string[] = [];
    const attempts: Array<[string, number]> = [];
    const consumer = await runConsumer<{ id: string }>(nc, {
      ...options, // one slot
      handler: async (payload, delivery) => {
        attempts.push([payload.id, delivery.attempt]);
        events.push(`${payload.id} started`);
        if (payload.id === 'long') {
          delivery.releaseSlot?.();
          delivery.releaseSlot?.(); // a second call does nothing
          // Past the ack wait twice: only heartbeats keep the released delivery from being redelivered.
          await sleep(2.5 * ACK_WAIT_MS);
        }
        events.push(`${payload.id} done`);
      },
    });
    await publishEvent(nc, subject, { id: 'long' }, 'long');
    await publishEvent(nc, subject, { id: 'short' }, 'short');
    while (!events.includes('short done')) await sleep(50);
    // The second message ran on the one slot while the first was still in its handler.
    expect(events.slice(0, 3)).toEqual(['long started', 'short started', 'short done']);
    await consumer.stop();
    expect(events).toEqual(['long started', 'short started', 'short done', 'long done']);
    expect(attempts).toEqual([
      ['long', 1],
      ['short', 1],
    ]);
    // Both were acknowledged: nothing is left for a new worker of the same durable consumer.
    const again: string[] = [];
    const next = await runConsumer<{ id: string }>(nc, { ...options, handler: async (p) => void again.push(p.id) });
    await sleep(ACK_WAIT_MS + 500);
    await next.stop();
    expect(again).toEqual([]);
  });
});
