import { ErrorCode } from '@kb/common';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyRules, validationRules } from './common/openapi-validation';
import { CreateProjectDto } from './projects/projects.controller';
import { FILE_NAME_PATTERN } from './documents/documents.controller';
import { fileNameProblem } from '../../documents/src/documents/documents.service';
import { buildGatewayReference, COMMITTED_REFERENCE, serializeReference } from './reference';
import { SKIP_REASONS, WEBHOOK_EVENT_TYPES } from '@kb/events';
import { MAX_PAGE_NUMBER } from './common/validation';

const ROOT = path.resolve(__dirname, '../../..');
jest.setTimeout(120_000);

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

describe('the API reference built without any backing service (npm run openapi)', () => {
  let doc: Json;
  const operations = () =>
    Object.entries(doc.paths as Json).flatMap(([p, item]) =>
      Object.entries(item as Json)
        .filter(([m]) => METHODS.includes(m))
        .map(([m, op]) => ({ where: `${m.toUpperCase()} ${p}`, path: p, method: m, op: op as Json })),
    );
  const schema = (ref: string) => doc.components.schemas[ref.replace('#/components/schemas/', '')];
  beforeAll(async () => {
    doc = await buildGatewayReference();
  });

  it('names every operation for what it does, once, with a summary', () => {
    const ids = operations().map(({ where, op }) => [where, op.operationId, typeof op.summary === 'string' && op.summary.length > 0]);
    for (const [where, id, summary] of ids) expect([where, id, summary]).toEqual([where, expect.stringMatching(/^[a-z][A-Za-z]+$/), true]);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
    const byRoute = Object.fromEntries(operations().map(({ where, op }) => [where, op.operationId]));
    expect(byRoute).toMatchObject({
      'POST /api/v2/projects': 'createProject',
      'GET /api/v2/documents': 'listDocuments',
      'GET /api/v2/documents/{id}': 'getDocument',
      'POST /api/v2/documents': 'reserveDocument',
      'POST /api/v2/documents/process': 'processDocuments',
      'POST /api/v2/agent/query': 'queryAgent',
      'POST /api/v2/chat': 'chat',
      'POST /api/v2/agent/batches': 'createBatch',
      'GET /api/v2/agent/batches/{id}/export': 'exportBatch',
      'POST /api/v2/check/verify': 'verifyRequirement',
      'POST /api/v2/check/runs': 'createCheckRun',
      'GET /api/v2/check/runs/{id}/report': 'getCheckRunReport',
    });
  });

  it('types every success: the envelope with a typed data (pagination on lists), SSE for chat, CSV for the export', () => {
    for (const { where, op } of operations()) {
      for (const [status, r] of Object.entries(op.responses as Json).filter(([s]) => s.startsWith('2'))) {
        if (status === '204') {
          expect([where, r.content]).toEqual([where, undefined]);
          continue;
        }
        const json = r.content?.['application/json'];
        if (!json) continue;
        const s = json.schema;
        expect([where, s.required]).toEqual([where, expect.arrayContaining(['success', 'data', 'request_id'])]);
        const data = s.properties.data;
        const model = data.$ref ?? data.items?.$ref;
        expect([where, typeof model]).toEqual([where, 'string']);
        expect([where, Object.keys(schema(model).properties ?? {}).length > 0]).toEqual([where, true]);
        if (/^list/.test(op.operationId) && op.operationId !== 'listCheckRunRequirements')
          expect([where, s.required.includes('pagination')]).toEqual([where, true]);
      }
      const success = Object.entries(op.responses as Json).filter(([st]) => st.startsWith('2'));
      expect([where, success.length]).toEqual([where, 1]);
    }
    const chat = doc.paths['/api/v2/chat'].post.responses['200'].content;
    expect(Object.keys(chat).sort()).toEqual(['application/json', 'text/event-stream']);
    const events = schema(chat['text/event-stream'].schema.$ref).oneOf;
    expect(events.map((e: Json) => e.properties.event.const)).toEqual(['meta', 'delta', 'citations', 'done', 'error']);
    // `data` is JSON text on the wire: a string whose content is the event's model.
    for (const e of events) expect([e.properties.data.type, e.properties.data.contentMediaType]).toEqual(['string', 'application/json']);
    for (const e of events) expect(Object.keys(schema(e.properties.data.contentSchema.$ref).properties).length).toBeGreaterThan(0);
    const csv = doc.paths['/api/v2/agent/batches/{id}/export'].get.responses['200'];
    expect(Object.keys(csv.content)).toEqual(['text/csv']);
    expect(csv.content['text/csv'].example).toMatch(/^index,question,status,answer,sources,error\r\n/);
    expect(csv.headers['Content-Disposition']).toBeDefined();
    // The run report: three file types (XLSX and PDF binary), its format enum, 409 for a pending run.
    const report = doc.paths['/api/v2/check/runs/{id}/report'].get;
    expect(report.responses['200'].content).toEqual({
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { schema: { type: 'string', format: 'binary' } },
      'text/csv': {
        schema: { type: 'string' },
        example: expect.stringMatching(/^index,requirement,ref,machine_result,score,review_decision,reviewer,comment,evidence,sources\r\n/),
      },
      'application/pdf': { schema: { type: 'string', format: 'binary' } },
    });
    expect(report.responses['200'].headers['Content-Disposition']).toBeDefined();
    expect(report.parameters.find((p: Json) => p.name === 'format').schema).toMatchObject({ enum: ['xlsx', 'csv', 'pdf'], default: 'xlsx' });
    expect(Object.keys(report.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '409']));
  });

  it('documents the not-found of every operation that names a resource, in the error envelope', () => {
    for (const { where, path: p, op } of operations()) {
      const body = op.requestBody?.content?.['application/json']?.schema?.$ref;
      const props = body ? Object.keys(schema(body).properties ?? {}) : [];
      const namesOne = p.includes('{') || props.includes('project_id');
      if (!namesOne) continue;
      const r = op.responses['404'];
      expect([where, r?.content?.['application/json']?.schema]).toEqual([where, { $ref: '#/components/schemas/ErrorEnvelope' }]);
      expect([where, r.content['application/json'].examples.NOT_FOUND.value.error.code]).toEqual([where, ErrorCode.NOT_FOUND]);
    }
  });

  it('gives request fields their own examples, and each field its own 400 example with the message validation answers', () => {
    for (const { where, op } of operations()) {
      const ref = op.requestBody?.content?.['application/json']?.schema?.$ref;
      if (ref) {
        const props = Object.entries(schema(ref).properties as Json);
        for (const [field, p] of props) expect([where, field, p.example !== undefined || Boolean(p.items?.$ref || p.$ref)]).toEqual([where, field, true]);
        const strings = props.map(([, p]) => p.example).filter((e) => typeof e === 'string');
        expect([where, new Set(strings).size]).toEqual([where, strings.length]);
      }
      const bad = op.responses['400']?.content['application/json'].examples;
      if (bad) {
        const messages = Object.values(bad as Json).map((e) => e.value.error.message);
        expect([where, new Set(messages).size]).toEqual([where, messages.length]);
      }
    }
    const create = doc.paths['/api/v2/projects'].post.responses['400'].content['application/json'].examples;
    expect(create.name.value.error.message).toBe('name must be 1 to 200 characters');
    expect(create.description.value.error.message).toBe('description must be at most 500 characters');
    expect(doc.paths['/api/v2/projects'].get.responses['400'].content['application/json'].examples.limit.value.error.message).toMatch(/^limit must be /);
  });

  it('states exactly what validation enforces (derived from the class-validator rules)', () => {
    const create = doc.components.schemas.CreateProjectDto;
    expect(create.required).toEqual(['name']);
    expect(create.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
    const run = doc.components.schemas.CreateRunDto;
    expect(run.properties.requirements).toMatchObject({ type: 'array', minItems: 1, maxItems: 1000 });
    expect(run.properties.handbook_ids).toMatchObject({ maxItems: 100, items: { type: 'string', format: 'uuid' } });
    const limit = doc.paths['/api/v2/projects'].get.parameters.find((p: Json) => p.name === 'limit');
    expect(limit).toMatchObject({ required: false, schema: { type: 'integer', minimum: 1, maximum: 200 } });
    // Text fields refuse NUL (the gateway's invalidTextIn): stated as a pattern.
    expect(new RegExp(create.properties.name.pattern).test('a\u0000b')).toBe(false);
    expect(new RegExp(create.properties.name.pattern).test('Site safety')).toBe(true);
    // Rules of the services: blank names refused; an update names at least one field.
    expect(new RegExp(create.properties.name.pattern).test('   ')).toBe(false);
    expect(doc.components.schemas.UpdateProjectDto.allOf).toEqual([{ anyOf: [{ required: ['name'] }, { required: ['description'] }] }]);
    // A schema that says otherwise is overwritten by the rules.
    const wrong: Json = { type: 'string', minLength: 0, maxLength: 999 };
    applyRules(wrong, validationRules(CreateProjectDto).get('name')!);
    expect(wrong).toEqual({ type: 'string', minLength: 1, maxLength: 200 });
  });

  it('states the rules the services check beyond class-validator (file names, path ids)', () => {
    const pattern = new RegExp(FILE_NAME_PATTERN);
    const names = [
      'handbook.pdf',
      ' ',
      '',
      '   x ',
      'a\u0000b',
      'line\nbreak',
      'tab\there',
      'dir/x.pdf',
      'dir\\x.pdf',
      'del\u007f',
      'c1\u0085',
      'Ünïcödé 名前.pdf',
      '\u00a0',
    ];
    for (const name of names) expect([name, pattern.test(name) && name.length <= 500]).toEqual([name, fileNameProblem(name) === null]);
    expect(doc.components.schemas.ReserveUploadDto.properties.file_name.pattern).toBe(FILE_NAME_PATTERN);
    for (const { where, op } of operations()) {
      for (const p of (op.parameters ?? []).filter((x: Json) => x.in === 'path')) {
        const expected = p.name === 'n' ? { type: 'integer', minimum: 1, maximum: MAX_PAGE_NUMBER } : { type: 'string', format: 'uuid' };
        expect([where, p.schema]).toEqual([where, expected]);
      }
    }
  });

  it('links each creation to the operations on the new id', () => {
    const links = doc.paths['/api/v2/projects'].post.responses['201'].links;
    expect(Object.keys(links).sort()).toEqual(['deleteProject', 'getProject', 'updateProject']);
    expect(links.getProject).toEqual({ operationId: 'getProject', parameters: { id: '$response.body#/data/id' } });
    expect(Object.keys(doc.paths['/api/v2/check/runs'].post.responses['201'].links).sort()).toEqual([
      'compareCheckRuns',
      'getCheckRun',
      'getCheckRunReport',
      'listCheckRunRequirements',
      'rerunCheckRun',
      'stopCheckRun',
      'triggerCheckRun',
    ]);
    expect(Object.keys(doc.paths['/api/v2/documents'].post.responses['201'].links).sort()).toEqual([
      'getDocument',
      'getDocumentDownload',
      'listDocumentChunks',
    ]);
  });

  it('has a bearer scheme for the opaque kb_ key (no JWT format), a server, and the presigned upload', () => {
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer', description: expect.stringContaining('kb_') });
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    const reserve = doc.paths['/api/v2/documents'].post;
    expect(reserve.description).toMatch(/PUT <upload\.url>/);
    expect(reserve.description).toMatch(/Content-Type/);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });

  it('equals the committed openapi/openapi.json, so that an API change shows in the diff', () => {
    const committed = readFileSync(path.join(ROOT, COMMITTED_REFERENCE), 'utf8');
    const built = serializeReference(doc as never);
    if (committed === built) return;
    const a = committed.split('\n');
    const b = built.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    throw new Error(
      `${COMMITTED_REFERENCE} differs from the document the code builds (first at line ${line + 1}: committed ${JSON.stringify(a[line])}, built ${JSON.stringify(b[line])}). ` +
        'Run `npm run openapi:update` and commit the result.',
    );
  });

  it('types every number: integers for sizes, counters, indexes and pages; `number` only for fractional quantities', () => {
    // Scores and confidences (0–1) and PDF coordinates (points, fractional) are the only non-integers.
    const FRACTIONAL = new Set(['confidence', 'score', 'width', 'height', 'x0', 'y0', 'x1', 'y1']);
    const numbers: string[] = [];
    for (const [name, s] of Object.entries(doc.components.schemas as Json)) {
      for (const [field, p] of Object.entries((s.properties ?? {}) as Json)) if ([p.type].flat().includes('number')) numbers.push(`${name}.${field}`);
    }
    expect(numbers.filter((n) => !FRACTIONAL.has(n.split('.')[1]))).toEqual([]);
    for (const f of [
      'ProjectView.document_count',
      'DocumentView.size_bytes',
      'DocumentView.chunk_count',
      'DocumentView.version',
      'DocumentChunkView.order_index',
      'CitationView.index',
      'BatchView.total_questions',
      'UsageView.total_tokens',
      'DeliveryView.attempts',
    ]) {
      const [model, field] = f.split('.');
      expect([f, [doc.components.schemas[model].properties[field].type].flat()[0]]).toEqual([f, 'integer']);
    }
  });

  it('closes the type holes of clients: the project update body, skip reasons, verify sources’ section', () => {
    expect(doc.paths['/api/v2/projects/{id}'].patch.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/UpdateProjectDto' });
    expect(doc.components.schemas.SkippedDocumentView.properties.reason.enum).toEqual([...SKIP_REASONS]);
    expect(Object.keys(doc.components.schemas.VerifySourceView.properties)).toEqual(Object.keys(doc.components.schemas.SourceView.properties));
  });

  it('describes each webhook event’s payload under OpenAPI 3.1 `webhooks`, signed with the Standard Webhooks headers', () => {
    expect(Object.keys(doc.webhooks)).toEqual([...WEBHOOK_EVENT_TYPES]);
    const dataOf: Record<string, string> = {};
    for (const [type, item] of Object.entries(doc.webhooks as Json)) {
      const op = item.post;
      expect(op.parameters.filter((p: Json) => p.required).map((p: Json) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
      const body = schema(op.requestBody.content['application/json'].schema.$ref);
      expect(body.required).toEqual(['id', 'type', 'created_at', 'org_id', 'data']);
      expect(body.properties.type.enum).toEqual([type]);
      dataOf[type] = body.properties.data.$ref.replace('#/components/schemas/', '');
      expect(Object.keys(schema(body.properties.data.$ref).properties).length).toBeGreaterThan(0);
    }
    // `data` is the resource as its GET shows it (docs/webhooks.md "Events").
    expect(dataOf).toMatchObject({
      'document.ready': 'DocumentView',
      'check_run.completed': 'RunView',
      'batch.failed': 'BatchView',
      'check_run.requirement_reviewed': 'RequirementView',
    });
    expect(doc.paths['/api/v2/documents/{id}'].get.responses['200'].content['application/json'].schema.properties.data.$ref).toBe(
      '#/components/schemas/DocumentView',
    );
  });

  it('passes Redocly’s recommended ruleset with 0 errors and 0 warnings', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-openapi-'));
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    let output: string;
    try {
      output = execFileSync(path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      output = String((e as { stdout?: string }).stdout ?? e);
    }
    const report = JSON.parse(output.slice(output.indexOf('{')));
    const problems = (report.problems as Json[]).map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`);
    expect(problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });
});
