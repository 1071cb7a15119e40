import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectNats, ensureStream, NatsConnection, publishEvent, runConsumer } from './nats';
import type { Logger } from './logger';

jest.setTimeout(60_000);

/** The real nats-server (Debian package, see the engineering guide), JetStream on, on a free port. */
const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => existsSync(p)) ?? 'nats-server';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

const silent = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;

describe('runConsumer (real nats-server)', () => {
  let server: ChildProcess;
  let dir: string;
  let nc: NatsConnection;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kb-nats-spec-'));
    const port = await freePort();
    server = spawn(NATS_SERVER, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    nc = await connectNats(`nats://127.0.0.1:${port}`, 'nats-spec', 20_000);
  });

  afterAll(async () => {
    await nc?.close();
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited; // the server writes its store until it exits
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('processes a backlog longer than ack_wait once each: no message waits unheartbeated behind busy slots', async () => {
    await ensureStream(nc, 'SPEC', ['spec.work']);
    const seen: { n: number; attempt: number }[] = [];
    // Each message takes well over ack_wait; with 2 slots, messages 3-6 wait for a slot. A message
    // waiting in a client buffer without heartbeats would be redelivered (attempt 2) and run twice.
    const consumer = await runConsumer<{ n: number }>(nc, {
      stream: 'SPEC',
      durable: 'spec-slow',
      filterSubject: 'spec.work',
      ackWaitMs: 2000, // heartbeats every second (the floor of ack_wait / 3)
      maxDeliver: 5,
      concurrency: 2,
      logger: silent,
      handler: async ({ n }, { attempt }) => {
        seen.push({ n, attempt });
        await new Promise((resolve) => setTimeout(resolve, 4000));
      },
    });
    try {
      for (let n = 1; n <= 6; n++) await publishEvent(nc, 'spec.work', { n });
      while (seen.length < 6) await new Promise((resolve) => setTimeout(resolve, 200));
      // Let any redelivery show up before judging.
      await new Promise((resolve) => setTimeout(resolve, 4000));
    } finally {
      await consumer.stop();
    }
    expect(seen.map((s) => s.n).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen.every((s) => s.attempt === 1)).toBe(true);
    const info = await (await nc.jetstreamManager()).consumers.info('SPEC', 'spec-slow');
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
  });
});
