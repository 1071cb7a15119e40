import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExtraStack, startExtraStack } from './support/harness';

jest.setTimeout(600_000);

const RESTART = { initialDelayMs: 500, maxDelayMs: 4000 };
const KILLS = 10;

/**
 * The local launcher's supervisor (tools/lib/stack.mjs, what `npm start` runs), started as a
 * process like every extra stack: a service killed 10 times in a row comes back every time, at once
 * after each of the first 5 kills (killed workers' work waits for a worker) and then after a capped
 * exponential backoff, each restart logged with its reason, and meanwhile `/readyz` answers 503 with
 * the error envelope naming the unavailable service. Its own stack: killing a service of the
 * shared one would disturb the other suites.
 */
describe('local launcher: a crashed service is restarted, forever', () => {
  let dir: string;
  let stack: ExtraStack | undefined;
  let dataDir: string;
  const pidOf = (name: string) => JSON.parse(readFileSync(path.join(dataDir, 'pids.json'), 'utf8'))[name] as number;
  const readyz = async () => {
    const res = await fetch(`${stack!.baseUrl}/readyz`);
    return { status: res.status, body: (await res.json()) as any };
  };
  async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-launcher-'));
    dataDir = path.join(dir, 'stack');
    // Lexical search only: this suite needs no embedding model (the retrieval service starts faster).
    stack = await startExtraStack(dataDir, { EMBEDDINGS_PROVIDER: 'none' }, { restart: RESTART });
  });

  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it(`brings the check service back after ${KILLS} kills in a row; /readyz names it while it is down`, async () => {
    const pids = new Set<number>();
    const notReady: any[] = [];
    for (let i = 1; i <= KILLS; i++) {
      await until('the stack to be ready', async () => ((await readyz()).status === 200 ? true : undefined));
      const pid = pidOf('check');
      pids.add(pid);
      process.kill(pid, 'SIGKILL');
      // While it is down: 503, the error envelope, the check service named.
      notReady.push(await until('/readyz to report the check service down', async () => {
        const r = await readyz();
        return r.status === 503 ? r.body : undefined;
      }));
      // Back: a new process, and ready again.
      await until('a new check process', async () => (pidOf('check') !== pid ? true : undefined));
    }
    const back = await until('the stack to be ready after the last kill', async () => {
      const r = await readyz();
      return r.status === 200 ? r.body : undefined;
    });
    expect(back.data.checks).toEqual({ database: 'ok', nats: 'ok', documents: 'ok', ingestion: 'ok', retrieval: 'ok', check: 'ok', agent: 'ok', webhooks: 'ok' });
    pids.add(pidOf('check'));
    expect(pids.size).toBe(KILLS + 1);

    for (const body of notReady) {
      expect(body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Not ready: the check service is unavailable.' }, request_id: expect.any(String) });
    }

    // Every restart was logged with its reason, its attempt and the delay before it: 0.5 s for the
    // first 5 crashes in a row (RESTART_DEFAULTS.promptRestarts), then doubling, capped.
    const log = readFileSync(path.join(dataDir, 'logs', 'stack.log'), 'utf8').split('\n');
    const exits = log
      .map((l) => l.match(/ check exited \(signal SIGKILL\) after [\d.]+ s; restart attempt (\d+) in ([\d.]+) s/))
      .filter((m): m is RegExpMatchArray => m !== null)
      .map((m) => [Number(m[1]), Number(m[2])]);
    expect(exits).toEqual(Array.from({ length: KILLS }, (_, i) => [i + 1, Math.min(RESTART.maxDelayMs, RESTART.initialDelayMs * 2 ** Math.max(0, i - 5)) / 1000]));
    expect(log.filter((l) => / check restarted \(attempt \d+, pid \d+\)/.test(l))).toHaveLength(KILLS);
  });
});
