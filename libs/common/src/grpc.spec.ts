import { documentsV1 } from '@kb/proto';
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
