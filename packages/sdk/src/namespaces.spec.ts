import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { KbClient } from './client';

/** The committed OpenAPI document of the service: the operations the SDK must cover. */
const document = JSON.parse(readFileSync(path.resolve(__dirname, '../../../openapi/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, { content?: Record<string, { schema?: { required?: string[] } }> }> }>>;
};

/** Operations left out of the namespaces on purpose, with the reason. */
const EXCLUDED: Record<string, string> = {
  checkLiveness: 'GET /healthz: a probe for orchestrators (no API key), not work a client does',
  checkReadiness: 'GET /readyz: a probe for orchestrators (no API key), not work a client does',
};

interface Operation {
  id: string;
  method: string;
  pattern: RegExp;
  paginated: boolean;
}

const operations: Operation[] = Object.entries(document.paths).flatMap(([template, methods]) =>
  Object.entries(methods)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({
      id: op.operationId,
      method: method.toUpperCase(),
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      paginated: !!op.responses['200']?.content?.['application/json']?.schema?.required?.includes('pagination'),
    })),
);
const operationOf = (method: string, pathname: string) => operations.find((o) => o.method === method && o.pattern.test(pathname));

const ID = '00000000-0000-4000-8000-000000000001';

/**
 * A real HTTP server on 127.0.0.1 standing in for the service (and its storage), answering each
 * operation with an envelope of the declared shape, filled just enough for the SDK's flows: lists
 * empty (but the documents asked for by id, `completed`), runs and batches `completed`, a
 * reservation with an upload URL on this server, the chat as an event stream. It records the
 * operation of each request.
 */
async function standIn() {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url!, 'http://x');
      const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      if (url.pathname.startsWith('/storage/')) return res.writeHead(200).end();
      const op = operationOf(req.method!, url.pathname);
      hits.push(op?.id ?? `${req.method} ${url.pathname} (no operation)`);
      if (!op) return json(404, { success: false, error: { code: 'NOT_FOUND', message: 'no such operation' }, request_id: 'r' });
      if (op.id === 'chat') {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
        return res.end(
          event('meta', { agent: 'general', model: 'm', request_id: 'r' }) +
            event('delta', { content: 'hi' }) +
            event('citations', { citations: [] }) +
            event('done', { usage: null, finish_reason: 'stop' }),
        );
      }
      if (op.id === 'exportBatch' || op.id === 'getCheckRunReport') return res.writeHead(200, { 'Content-Type': 'text/csv' }).end('index\r\n');
      if (req.method === 'DELETE' && op.id !== 'deleteDocuments') return res.writeHead(204).end();
      if (op.paginated) {
        const wanted = url.searchParams.get('document_ids')?.split(',') ?? [];
        const data = wanted.map((id) => ({ id, status: 'completed' }));
        return json(200, { success: true, data, pagination: { limit: 50, offset: 0, total: data.length }, request_id: 'r' });
      }
      const { port } = server.address() as AddressInfo;
      return json(200, {
        success: true,
        data: {
          id: ID,
          status: 'completed',
          upload: { url: `http://127.0.0.1:${port}/storage/${ID}`, method: 'PUT', recommended_content_type: 'text/plain' },
          processed: [ID],
          skipped: [],
          failed: [],
          deleted: [],
          results: [],
          requirements: [],
        },
        request_id: 'r',
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { hits, baseUrl: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

const drain = async (events: AsyncIterable<unknown>) => {
  for await (const _ of events);
};

/** One call of every namespace method, with arguments the stand-in accepts. */
const CALLS: Record<string, (kb: KbClient) => Promise<unknown>> = {
  'organization.get': (kb) => kb.organization.get(),
  'projects.list': (kb) => kb.projects.list().firstPage(),
  'projects.get': (kb) => kb.projects.get(ID),
  'projects.create': (kb) => kb.projects.create({ name: 'p' }),
  'projects.update': (kb) => kb.projects.update(ID, { name: 'q' }),
  'projects.delete': (kb) => kb.projects.delete(ID),
  'documents.list': (kb) => kb.documents.list().toArray(),
  'documents.get': (kb) => kb.documents.get(ID),
  'documents.reserve': (kb) => kb.documents.reserve({ file_name: 'a.txt', content_type: 'text/plain', size_bytes: 1 }),
  'documents.process': (kb) => kb.documents.process([ID]),
  'documents.delete': (kb) => kb.documents.delete([ID]),
  'documents.download': (kb) => kb.documents.download(ID),
  'documents.upload': (kb) => kb.documents.upload([{ name: 'a.txt', data: new TextEncoder().encode('a') }], { pollIntervalMs: 1 }),
  'documents.uploadOne': (kb) => kb.documents.uploadOne({ name: 'a.txt', data: new TextEncoder().encode('a') }, { pollIntervalMs: 1 }),
  'documents.wait': (kb) => kb.documents.wait([ID]),
  'documents.chunks': (kb) => kb.documents.chunks(ID).toArray(),
  'documents.chunk': (kb) => kb.documents.chunk(ID, ID),
  'documents.page': (kb) => kb.documents.page(ID, 1),
  'checks.verify': (kb) => kb.checks.verify({ project_id: ID, requirement: 'r' }),
  'runs.create': (kb) => kb.runs.create({ project_id: ID, name: 'r', requirements: [{ text: 't' }] }),
  'runs.createAndWait': (kb) => kb.runs.createAndWait({ project_id: ID, name: 'r', requirements: ['t'] }, { pollIntervalMs: 1 }),
  'runs.get': (kb) => kb.runs.get(ID),
  'runs.list': (kb) => kb.runs.list({ projectId: ID }).firstPage(),
  'runs.requirements': (kb) => kb.runs.requirements(ID),
  'runs.trigger': (kb) => kb.runs.trigger(ID),
  'runs.stop': (kb) => kb.runs.stop(ID),
  'runs.rerun': (kb) => kb.runs.rerun(ID),
  'runs.compare': (kb) => kb.runs.compare(ID, ID),
  'runs.report': (kb) => kb.runs.report(ID, 'csv'),
  'runs.wait': (kb) => kb.runs.wait(ID, { pollIntervalMs: 1 }),
  'reviews.set': (kb) => kb.reviews.set(ID, ID, { decision: 'pass', reviewer: 'r' }),
  'reviews.clear': (kb) => kb.reviews.clear(ID, ID),
  'agent.query': (kb) => kb.agent.query({ question: 'q' }),
  'agent.chat': (kb) => drain(kb.agent.chat('q')),
  'agent.chatText': (kb) => kb.agent.chatText('q'),
  'batches.create': (kb) => kb.batches.create({ questions: ['q'] }),
  'batches.get': (kb) => kb.batches.get(ID),
  'batches.list': (kb) => kb.batches.list({ status: 'completed' }).firstPage(),
  'batches.results': (kb) => kb.batches.results(ID),
  'batches.export': (kb) => kb.batches.export(ID),
  'batches.wait': (kb) => kb.batches.wait(ID, { pollIntervalMs: 1 }),
  'webhooks.create': (kb) => kb.webhooks.create({ url: 'https://example.com/h', events: ['*'] }),
  'webhooks.list': (kb) => kb.webhooks.list().firstPage(),
  'webhooks.get': (kb) => kb.webhooks.get(ID),
  'webhooks.update': (kb) => kb.webhooks.update(ID, { enabled: false }),
  'webhooks.delete': (kb) => kb.webhooks.delete(ID),
  'webhooks.deliveries': (kb) => kb.webhooks.deliveries(ID).firstPage(),
  'webhooks.retryDelivery': (kb) => kb.webhooks.retryDelivery(ID, ID),
  'audit.list': (kb) => kb.audit.list({ action: 'project.created' }).firstPage(),
};

/** `namespace.method` of every method of every resource namespace of a client. */
function namespaceMethods(kb: KbClient): string[] {
  return Object.entries(kb)
    .filter(([, value]) => value && typeof value === 'object' && value.constructor.name.endsWith('Api'))
    .flatMap(([name, value]) =>
      Object.getOwnPropertyNames(Object.getPrototypeOf(value))
        .filter((m) => m !== 'constructor')
        .map((m) => `${name}.${m}`),
    );
}

describe('resource namespaces of KbClient', () => {
  let service: Awaited<ReturnType<typeof standIn>>;
  beforeAll(async () => (service = await standIn()));
  afterAll(() => service.close());

  it('the exclusions name operations of the document', () => {
    expect(Object.keys(EXCLUDED).filter((id) => !operations.some((o) => o.id === id))).toEqual([]);
  });

  it('every namespace method is exercised below (a new method needs its call in CALLS)', () => {
    const kb = new KbClient({ baseUrl: service.baseUrl, apiKey: 'kb_test' });
    expect(namespaceMethods(kb).sort()).toEqual(Object.keys(CALLS).sort());
  });

  it('every operation of openapi/openapi.json is sent by some namespace method, each method sends only operations of the document', async () => {
    const kb = new KbClient({ baseUrl: service.baseUrl, apiKey: 'kb_test', maxRetries: 0 });
    const sentBy: Record<string, string[]> = {};
    for (const [name, call] of Object.entries(CALLS)) {
      service.hits.length = 0;
      await call(kb);
      sentBy[name] = [...new Set(service.hits)];
    }
    expect(Object.entries(sentBy).filter(([, hits]) => hits.length === 0 || hits.some((h) => h.includes('(no operation)')))).toEqual([]);
    const covered = new Set(Object.values(sentBy).flat());
    const missing = operations.map((o) => o.id).filter((id) => !covered.has(id) && !(id in EXCLUDED));
    expect(missing).toEqual([]);
  });
});
