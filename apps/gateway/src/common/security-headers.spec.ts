import { securityHeaders } from './security-headers';

describe('securityHeaders', () => {
  it("records helmet's headers for the given options, once, without a request", () => {
    const headers = securityHeaders({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'same-site' } });
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(headers['strict-transport-security']).toMatch(/^max-age=\d+/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['cross-origin-resource-policy']).toBe('same-site');
    expect(headers['content-security-policy']).toBeUndefined();
    // Header names are lower-case, as Fastify stores them.
    expect(Object.keys(headers).every((k) => k === k.toLowerCase())).toBe(true);
  });

  it('follows the options (a default CSP when it is not disabled)', () => {
    expect(securityHeaders({})['content-security-policy']).toContain("default-src 'self'");
  });
});
