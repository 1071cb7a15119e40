import { ErrorCode } from '@kb/common';
import request from 'supertest';
import { baseUrl, kbctl, newOrg } from './support/harness';

jest.setTimeout(240_000);

type Json = Record<string, any>;
interface FuzzCase {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

const BAD_UUIDS = [
  '123',
  'not-a-uuid',
  '00000000-0000-0000-0000-00000000000g',
  "'%3B DROP TABLE x;--",
  'a'.repeat(300),
  '%00',
  '..%2F..%2Fetc',
  '%E0%A4%A',
  '{id}',
  '-1',
];
const BAD_INTS = ['-1', 'abc', '1e309', '99999999999999999999', '1.5', '', '0x10', 'NaN', '[]', '201', '2147483648', '1e2', ' 5', '+5'];
const BAD_STRINGS = ['\u0000', 'x'.repeat(5000), '%', '%ZZ'];
const BAD_VALUES: unknown[] = [null, 123, -1, 1.5, true, [], {}, [null], [123], 'x'.repeat(100_001), '', ['not-a-uuid'], { $gt: '' }, 1e308];
/**
 * Hostile text for every string field (issue 15): NUL, lone surrogates (high, low, reversed),
 * C0/C1 control characters, bidi and zero-width marks, 100k-character values (ASCII and astral),
 * mixed scripts with combining marks, whitespace-only, and JSON/SQL/HTML metacharacters.
 */
const HOSTILE_STRINGS: string[] = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00y',
  '\udc00\ud800',
  '\r\n\t\u0007\u001b[31m\u007f\u0085\u009f',
  '\u202e\u200b\u200d\ufeff\u2028\u2029',
  'x'.repeat(100_000),
  '😀'.repeat(50_000),
  'Grüße 日本語 العربية עברית русский हिन्दी 🏗️ Z̷̢a̶l̵g̴o',
  ' \t ',
  '\'; DROP TABLE documents;-- <script>alert(1)</script> {"$gt":""} %00 ../../etc/passwd',
];

/**
 * Percent-encodes text as UTF-8, and lone surrogates as their (invalid) 3-byte WTF-8 form, which
 * `encodeURIComponent` refuses to produce: what a client with broken text would send.
 */
function percentEncode(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff)
      out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => '%' + b.toString(16).toUpperCase()).join('');
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** Every string-typed field of a body schema, as a path into the body (`requirements.0.text`). */
function stringFields(doc: Json, schema: Json | undefined, prefix: string[] = [], depth = 0): string[][] {
  const s = resolveRef(doc, schema) ?? {};
  if (depth > 4) return [];
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  if (type === 'string') return [prefix];
  if (type === 'array') return stringFields(doc, s.items, [...prefix, '0'], depth + 1);
  if (type === 'object' || s.properties) return Object.entries(s.properties ?? {}).flatMap(([k, v]) => stringFields(doc, v as Json, [...prefix, k], depth + 1));
  return [];
}

/** A deep copy of `body` with the value at `path` replaced (arrays and objects created as needed). */
function withValue(body: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (/^\d+$/.test(head)) {
    const arr = Array.isArray(body) ? [...body] : [];
    arr[Number(head)] = withValue(arr[Number(head)], rest, value);
    return arr;
  }
  const obj = body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Json) } : {};
  obj[head] = withValue(obj[head], rest, value);
  return obj;
}

const MALFORMED_BODIES = [
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  'null',
  '[]',
  '"text"',
  '123',
  'true',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '['.repeat(5000) + ']'.repeat(5000),
  '\uFEFF{}',
  '{"a":"\\ud800"}',
];
const BAD_CONTENT_TYPES = [
  'text/plain',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'application/json; charset=utf-16',
];

function resolveRef(doc: Json, node: Json | undefined): Json | undefined {
  let n = node;
  while (n && n.$ref)
    n = n.$ref
      .split('/')
      .slice(1)
      .reduce((o: Json, k: string) => o?.[k], doc);
  return n;
}

/** A value the schema accepts (example, enum, format), used to keep the other fields valid. */
function validValue(doc: Json, schema: Json | undefined): unknown {
  const s = resolveRef(doc, schema) ?? {};
  if (s.example !== undefined) return s.example;
  if (s.enum) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  if (s.format === 'uuid') return '6f1c2a9e-0000-4000-8000-000000000000';
  if (type === 'string') return 'fuzz';
  if (type === 'integer' || type === 'number') return s.minimum ?? 1;
  if (type === 'boolean') return false;
  if (type === 'array') return [validValue(doc, s.items)];
  if (type === 'object' || s.properties)
    return Object.fromEntries(
      Object.entries(s.properties ?? {})
        .filter(([k]) => (s.required ?? []).includes(k))
        .map(([k, v]) => [k, validValue(doc, v as Json)]),
    );
  return 'fuzz';
}

/** Generates malformed requests for every operation of the served OpenAPI document. */
function generate(doc: Json): FuzzCase[] {
  const cases: FuzzCase[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Json)) {
    if (!path.startsWith('/api/')) continue;
    for (const [method, op] of Object.entries(ops as Json)) {
      const M = method.toUpperCase();
      const params = ((op.parameters ?? []) as Json[]).map((p) => resolveRef(doc, p)!);
      const pathParams = params.filter((p) => p.in === 'path');
      const fill = (p: string, values: Record<string, string> = {}) => p.replace(/\{(\w+)\}/g, (_, n) => values[n] ?? '6f1c2a9e-0000-4000-8000-000000000000');
      const okPath = fill(path);
      const bodySchema = resolveRef(doc, op.requestBody?.content?.['application/json']?.schema);
      const validBody = bodySchema ? (validValue(doc, bodySchema) as Json) : undefined;
      const json = (body: unknown) => ({ headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

      for (const p of pathParams)
        for (const bad of BAD_UUIDS)
          cases.push({
            name: `${M} ${path} path ${p.name}=${bad.slice(0, 20)}`,
            method: M,
            path: fill(path, { [p.name]: bad }),
            ...(validBody ? json(validBody) : {}),
          });
      for (const q of params.filter((p) => p.in === 'query')) {
        const schema = resolveRef(doc, q.schema) ?? {};
        const values =
          schema.type === 'integer'
            ? BAD_INTS
            : schema.enum
              ? ['bogus', 'READY', '', 'ready,failed']
              : schema.format === 'uuid'
                ? BAD_UUIDS
                : [...BAD_STRINGS, 'not-a-uuid,also-not'];
        for (const v of values)
          cases.push({ name: `${M} ${path} query ${q.name}=${v.slice(0, 20)}`, method: M, path: `${okPath}?${q.name}=${encodeURIComponent(v)}` });
        // Hostile text in every query parameter (short enough to fit the URL limit; longer → 431).
        for (const v of HOSTILE_STRINGS.map((h) => h.slice(0, 2000)))
          cases.push({ name: `${M} ${path} query ${q.name}=${JSON.stringify(v).slice(0, 20)}`, method: M, path: `${okPath}?${q.name}=${percentEncode(v)}` });
        cases.push({ name: `${M} ${path} query ${q.name} repeated`, method: M, path: `${okPath}?${q.name}=1&${q.name}=2` });
      }
      if (bodySchema) {
        for (const raw of MALFORMED_BODIES)
          cases.push({ name: `${M} ${path} body ${raw.slice(0, 20)}`, method: M, path: okPath, headers: { 'Content-Type': 'application/json' }, body: raw });
        cases.push({
          name: `${M} ${path} body invalid utf-8`,
          method: M,
          path: okPath,
          headers: { 'Content-Type': 'application/json' },
          body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        });
        for (const ct of BAD_CONTENT_TYPES)
          cases.push({ name: `${M} ${path} content-type ${ct}`, method: M, path: okPath, headers: { 'Content-Type': ct }, body: JSON.stringify(validBody) });
        cases.push({ name: `${M} ${path} empty object`, method: M, path: okPath, ...json({}) });
        for (const field of stringFields(doc, bodySchema)) {
          for (const bad of HOSTILE_STRINGS) {
            cases.push({
              name: `${M} ${path} ${field.join('.')}=${JSON.stringify(bad).slice(0, 20)}`,
              method: M,
              path: okPath,
              ...json(withValue(validBody, field, bad)),
            });
          }
        }
        for (const prop of Object.keys(bodySchema.properties ?? {})) {
          for (const bad of BAD_VALUES)
            cases.push({ name: `${M} ${path} ${prop}=${JSON.stringify(bad).slice(0, 20)}`, method: M, path: okPath, ...json({ ...validBody, [prop]: bad }) });
        }
      }
      cases.push({ name: `${M} ${path} bad request id`, method: M, path: okPath, headers: { 'X-Request-Id': 'x'.repeat(500) } });
      if (M === 'POST')
        cases.push({
          name: `${M} ${path} bad idempotency key`,
          method: M,
          path: okPath,
          headers: { 'Idempotency-Key': 'k'.repeat(256) },
          ...(validBody ? json(validBody) : {}),
        });
      for (const other of ['PUT', 'PATCH', 'DELETE', 'GET', 'POST'].filter((m) => !(m.toLowerCase() in (ops as Json)))) {
        cases.push({ name: `${other} ${path} unsupported method`, method: other, path: okPath });
      }
    }
  }
  for (const p of [
    '/api/v2',
    '/api/v2/',
    '/api/v3/projects',
    '/api/v2/projects/../organization',
    '/api/v2//projects',
    '/api/v2/projects%2F..',
    '/api/v2/' + 'x'.repeat(4000),
  ]) {
    cases.push({ name: `unknown route ${p.slice(0, 30)}`, method: 'GET', path: p });
  }
  return cases;
}

const CODES = Object.values(ErrorCode) as string[];

describe('gateway: fuzzing every endpoint from its OpenAPI document', () => {
  it('answers ≥500 malformed requests without a single 500, always in the envelope', async () => {
    const org = newOrg('Fuzz Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '100000').key;
    const doc = (await request(baseUrl()).get('/docs/openapi.json')).body;
    const cases = generate(doc);
    expect(cases.length).toBeGreaterThanOrEqual(500);

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++];
        const headers: Record<string, string> = { Authorization: `Bearer ${key}`, ...(c.headers ?? {}) };
        let res: Response;
        try {
          res = await fetch(baseUrl() + c.path, { method: c.method, headers, body: c.body, signal: AbortSignal.timeout(60_000) });
        } catch (e) {
          failures.push(`${c.name}: no response (${(e as Error).message})`);
          continue;
        }
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const text = await res.text();
        if (res.status >= 500) failures.push(`${c.name}: ${res.status} ${text.slice(0, 200)}`);
        if (res.status === 204) continue;
        // A request the generator happened to make valid may be answered as a stream (chat with
        // `stream: true`) or a CSV export: success bodies of those types are not JSON envelopes.
        const type = res.headers.get('content-type') ?? '';
        if (res.status < 400 && /^text\/(event-stream|csv)/.test(type)) {
          if (type.startsWith('text/event-stream') && !text.startsWith('event: meta'))
            failures.push(`${c.name}: ${res.status} stream does not start with meta: ${text.slice(0, 100)}`);
          if (!res.headers.get('x-ratelimit-limit')) failures.push(`${c.name}: ${res.status} without X-RateLimit-Limit`);
          continue;
        }
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          failures.push(`${c.name}: ${res.status} body is not JSON: ${text.slice(0, 100)}`);
          continue;
        }
        if (res.status >= 400) {
          const ok =
            body.success === false &&
            CODES.includes(body.error?.code) &&
            typeof body.error?.message === 'string' &&
            body.request_id === res.headers.get('x-request-id');
          if (!ok) failures.push(`${c.name}: ${res.status} not an error envelope: ${text.slice(0, 200)}`);
          if (/\bat \S+ \(|node_modules|\.[jt]s:\d+/.test(body.error?.message ?? '')) failures.push(`${c.name}: internals in message: ${body.error.message}`);
        } else if (body.success !== true) failures.push(`${c.name}: ${res.status} not a success envelope`);
        if (!res.headers.get('x-ratelimit-limit')) failures.push(`${c.name}: ${res.status} without X-RateLimit-Limit`);
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    // Visible in the test output: how the generated requests were answered.
    process.stderr.write(`fuzz: ${cases.length} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}\n`);
    expect(failures).toEqual([]);
    expect(statuses.get(500) ?? 0).toBe(0);
  });
});
