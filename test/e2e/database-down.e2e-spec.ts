import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { api, ExtraStack, freePort, newOrg, startExtraStack } from './support/harness';

jest.setTimeout(180_000);

/**
 * A TCP relay between the services and PostgreSQL that the test can take down and bring back:
 * down closes the listener and cuts every open connection (what the services see when PostgreSQL
 * stops: "Connection terminated", then ECONNREFUSED), up listens again on the same port.
 */
class DatabaseRelay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  constructor(
    readonly port: number,
    private readonly upstreamPort: number,
  ) {}

  /** Listens (again); does nothing when already up. */
  async up(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(this.upstreamPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.server = server;
  }

  /** Stops listening and cuts every relayed connection. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

/** Issue 29, defect 7: with PostgreSQL unreachable, database-backed endpoints answered 500. */
describe('PostgreSQL down: 503 SERVICE_UNAVAILABLE, then recovery', () => {
  let dir: string;
  let stack: ExtraStack;
  let relay: DatabaseRelay;
  let a: ReturnType<typeof api>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-dbdown-'));
    const dataDir = path.join(dir, 'stack');
    mkdirSync(dataDir, { recursive: true });
    // This stack's own PostgreSQL (never the shared suite stack's), reached by the services through the relay.
    const password = randomBytes(12).toString('hex');
    writeFileSync(
      path.join(dataDir, 'secrets.json'),
      JSON.stringify({ postgresPassword: password, storageSigningSecret: randomBytes(32).toString('hex'), webhookSecretKey: randomBytes(32).toString('hex') }),
      { mode: 0o600 },
    );
    const pgPort = await freePort();
    relay = new DatabaseRelay(await freePort(), pgPort);
    await relay.up();
    stack = await startExtraStack(
      dataDir,
      {
        LOG_LEVEL: 'info',
        DATABASE_URL: `postgres://postgres:${password}@127.0.0.1:${relay.port}/kb`,
        // The gateway's own admission (key, rate-limit lease) keeps serving from memory while the database is away.
        GATEWAY_KEY_CACHE_TTL_MS: '600000',
      },
      { ports: { postgres: pgPort } },
    );
    a = api(newOrg('Database Down Org', { databaseUrl: stack.databaseUrl, rateLimit: 6000 }).key, stack.baseUrl);
  });

  afterAll(async () => {
    await relay?.up().catch(() => undefined);
    await stack?.stop();
    await relay?.down();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it('answers GET /documents and POST /agent/query with 503 in the envelope, and recovers when the database is back', async () => {
    expect((await a.get('/api/v2/documents')).status).toBe(200);
    await relay.down();
    try {
      for (const res of [await a.get('/api/v2/documents'), await a.post('/api/v2/agent/query').send({ question: 'Are hard hats required on site?' })]) {
        expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(res.body.error.message).toMatch(/unavailable/i);
        expect(res.body.request_id).toBe(res.headers['x-request-id']);
      }
    } finally {
      await relay.up();
    }
    // The pools open new connections once PostgreSQL answers again.
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await a.get('/api/v2/documents')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 500));
    }
    expect(status).toBe(200);
  });
});
