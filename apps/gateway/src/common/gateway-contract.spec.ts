import { ErrorCode } from '@kb/common';
import { canonicalJson, requestFingerprint } from './idempotency';
import { finalizeOpenApi } from './openapi';
import { nextQuotaReset, quotaMonth } from '../usage/usage.service';
import { requestIdFor } from './http-context';

describe('finalizeOpenApi', () => {
  // A route as another controller might add it later (SSE chat), with nothing but its path.
  const doc = () =>
    finalizeOpenApi({
      openapi: '3.1.0',
      info: { title: 't', version: '2' },
      paths: {
        '/api/v2/chat': {
          post: { requestBody: { content: { 'application/json': { schema: { type: 'object' } } } }, responses: { '200': { description: 'SSE or JSON' } } },
        },
        '/api/v2/things/{id}': { get: { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', nullable: true } }], responses: {} } },
        '/healthz': { get: { responses: { '200': { description: 'ok' } } } },
      },
    } as never) as any;

  it('gives a route added later the gateway-wide contract: security, headers, error responses with examples', () => {
    const chat = doc().paths['/api/v2/chat'].post;
    expect(chat.security).toEqual([{ bearer: [] }]);
    expect(chat.parameters).toEqual(
      expect.arrayContaining([{ $ref: '#/components/parameters/IdempotencyKey' }, { $ref: '#/components/parameters/RequestId' }]),
    );
    expect(Object.keys(chat.responses).sort()).toEqual(['200', '400', '401', '402', '409', '413', '429', '431', '500', '503', '504']);
    expect(chat.responses['200'].headers['Idempotent-Replayed']).toBeDefined();
    expect(chat.responses['429'].headers['Retry-After']).toBeDefined();
    expect(chat.responses['401'].headers['X-RateLimit-Limit']).toBeUndefined();
    // 431 is answered before the key is read: no rate-limit headers.
    expect(chat.responses['431'].headers['X-RateLimit-Limit']).toBeUndefined();
    expect(chat.responses['413'].content['application/json'].examples.PAYLOAD_TOO_LARGE.value.error.code).toBe(ErrorCode.PAYLOAD_TOO_LARGE);
  });

  it('adds 404 for path ids, leaves public routes unauthenticated, and rewrites nullable for JSON Schema 2020-12', () => {
    const d = doc();
    const thing = d.paths['/api/v2/things/{id}'].get;
    expect(thing.responses['404']).toBeDefined();
    expect(thing.responses['409']).toBeUndefined();
    expect(thing.parameters[0].schema).toEqual({ type: ['string', 'null'] });
    // Public: an empty security requirement (no key), and the HTTP layer's 431.
    expect(d.paths['/healthz'].get.security).toEqual([]);
    expect(d.paths['/healthz'].get.responses['431']).toBeDefined();
    expect(d.paths['/healthz'].get.responses['200'].headers['X-RateLimit-Limit']).toBeUndefined();
    expect(d.components.schemas.ErrorEnvelope.properties.error.properties.code.enum).toEqual(Object.values(ErrorCode));
  });
});

describe('idempotency fingerprint', () => {
  it('ignores key order but not values, method or path', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
    const f = requestFingerprint('POST', '/api/v2/projects', { name: 'x', description: 'y' });
    expect(requestFingerprint('POST', '/api/v2/projects', { description: 'y', name: 'x' })).toBe(f);
    expect(requestFingerprint('POST', '/api/v2/projects', { name: 'x', description: 'z' })).not.toBe(f);
    expect(requestFingerprint('POST', '/api/v2/documents', { name: 'x', description: 'y' })).not.toBe(f);
  });
});

describe('quota months (UTC)', () => {
  it('switches month exactly at 00:00 UTC on the 1st, whatever the local time zone', () => {
    expect(quotaMonth(new Date('2030-12-31T23:59:59.999Z'))).toBe('2030-12-01');
    expect(quotaMonth(new Date('2031-01-01T00:00:00.000Z'))).toBe('2031-01-01');
    expect(nextQuotaReset(new Date('2030-12-31T23:59:59.999Z'))).toBe(Date.UTC(2031, 0, 1) / 1000);
    expect(nextQuotaReset(new Date('2032-02-15T12:00:00Z'))).toBe(Date.UTC(2032, 2, 1) / 1000);
  });
});

describe('request ids', () => {
  it('keeps 1–128 printable ASCII characters, replaces anything else', () => {
    expect(requestIdFor('trace-1')).toBe('trace-1');
    expect(requestIdFor('x'.repeat(128))).toBe('x'.repeat(128));
    for (const bad of ['x'.repeat(129), '', 'with space', 'tab\t', undefined]) expect(requestIdFor(bad)).toMatch(/^[0-9a-f-]{36}$/);
  });
});
