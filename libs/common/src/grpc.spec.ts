import { documentsV1 } from '@kb/proto';
import { ChildProcess, spawn } from 'node:child_process';
import { ErrorCode } from './errors';
import { AsyncClient, CallContext, createAsyncClient, startGrpcServer, UnaryHandlers } from './grpc';
import { createLogger, runWithContext } from './logger';

/**
 * The org of an outgoing call is the one the caller passes, never one picked up from the logging
 * context: a real grpc-js server echoes the context it received.
 */
describe('gRPC call context', () => {
  const seen: CallContext[] = [];
  let client: AsyncClient<typeof documentsV1.DocumentsServiceService>;
  let shutdown: () => Promise<void>;

  beforeAll(async () => {
    const handlers = {
      getProject: async (req: documentsV1.GetProjectRequest, ctx: CallContext) => {
        seen.push(ctx);
        return { id: req.id, orgId: ctx.orgId, name: ctx.requestId, documentCount: 0, createdAt: '', updatedAt: '' };
      },
    } as unknown as UnaryHandlers<typeof documentsV1.DocumentsServiceService>;
    const server = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('grpc-spec'),
      services: [{ name: 'kb.documents.v1.DocumentsService', definition: documentsV1.DocumentsServiceService, handlers }],
    });
    shutdown = server.shutdown;
    client = createAsyncClient(documentsV1.DocumentsServiceService, `127.0.0.1:${server.port}`);
  });
  afterAll(async () => {
    client?.close();
    await shutdown?.();
  });

  it('sends the org and request id it is given', async () => {
    const p = await client.getProject({ id: 'p1' }, { orgId: 'org-a', requestId: 'req-1' });
    expect([p.orgId, p.name]).toEqual(['org-a', 'req-1']);
  });

  it('scopes a call made inside another request to the org passed, not the logging context', async () => {
    const p = await runWithContext({ orgId: 'org-of-the-log-context', requestId: 'req-outer' }, () => client.getProject({ id: 'p1' }, { orgId: 'org-b' }));
    // The request id (log correlation only) follows the logging context when none is given.
    expect([p.orgId, p.name]).toEqual(['org-b', 'req-outer']);
  });

  it('carries the API key of the caller (audit actor), a name outside ASCII included, and none when not given', async () => {
    await client.getProject({ id: 'p1' }, { orgId: 'org-a', actor: { apiKeyId: 'key-1', apiKeyName: 'Équipe CI – prod' } });
    expect(seen[seen.length - 1].actor).toEqual({ apiKeyId: 'key-1', apiKeyName: 'Équipe CI – prod' });
    await client.getProject({ id: 'p1' }, { orgId: 'org-a', actor: { apiKeyId: 'key-2', apiKeyName: null } });
    expect(seen[seen.length - 1].actor).toEqual({ apiKeyId: 'key-2', apiKeyName: null });
    await client.getProject({ id: 'p1' }, { orgId: 'org-a' });
    expect(seen[seen.length - 1].actor).toBeUndefined();
  });

  it('is refused by the callee when the org is empty', async () => {
    const before = seen.length;
    await expect(client.getProject({ id: 'p1' }, { orgId: '' })).rejects.toMatchObject({ code: ErrorCode.UNAUTHORIZED });
    expect(seen.length).toBe(before);
  });
});

/**
 * A server whose event loop is busy answers keepalive pings late. grpc-js's default keepalive timeout
 * (20 s) then dropped the connection and ended every call on it UNAVAILABLE (the ingestion worker's
 * EmbedDocument in CI); the platform's clients wait 60 s for the answer.
 */
describe('gRPC client keepalive', () => {
  const BLOCKED_MS = 22_000;
  let server: ChildProcess;
  let port: number;

  beforeAll(async () => {
    // The server runs in its own process: its event loop is blocked (Atomics.wait, no CPU burnt) for
    // 22 s after a call arrives, then it answers with an empty (all-default) message.
    const script = `
      const grpc = require('@grpc/grpc-js');
      const server = new grpc.Server();
      const id = (b) => b;
      server.addService({ getProject: { path: ${JSON.stringify(documentsV1.DocumentsServiceService.getProject.path)}, requestStream: false, responseStream: false,
        requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
        getProject: (call, callback) => setTimeout(() => {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${BLOCKED_MS});
          callback(null, Buffer.alloc(0));
        }, 100),
      });
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => console.log(err ? 'error ' + err.message : 'port ' + port));
    `;
    server = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve, reject) => {
      server.stdout?.once('data', (d: Buffer) => {
        const m = /port (\d+)/.exec(d.toString());
        if (m) resolve(Number(m[1]));
        else reject(new Error(d.toString()));
      });
    });
  });
  afterAll(() => server?.kill());

  it('keeps a call open while the server does not answer pings for 22 s', async () => {
    // Pings every second (instead of 30 s) so that several fall inside the blocked stretch.
    const client = createAsyncClient(documentsV1.DocumentsServiceService, `127.0.0.1:${port}`, { 'grpc.keepalive_time_ms': 1000 });
    try {
      const started = Date.now();
      const project = await client.getProject({ id: 'p1' }, { orgId: 'org-a', timeoutMs: 40_000 });
      expect(project.id).toBe('');
      expect(Date.now() - started).toBeGreaterThanOrEqual(BLOCKED_MS);
    } finally {
      client.close();
    }
  }, 45_000);
});
