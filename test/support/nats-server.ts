import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real nats-server (`KB_NATS_SERVER`, which `npm test` sets to the one the stack runs, else the one on PATH)
 * with JetStream on a free loopback port, in a temporary store folder, for unit and medium tests.
 * @returns its URL and `stop` (ends the process, removes the folder).
 */
export async function startNatsServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const bin = process.env.KB_NATS_SERVER || execFileSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).trim();
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-nats-spec-'));
  const child: ChildProcess = spawn(bin, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
