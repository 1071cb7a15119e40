import { isPublicPath, publicRouteOf } from './request-policy';

describe('public routes (PUBLIC_ROUTES)', () => {
  it('serves probes, the reference and presigned storage URLs without a key', () => {
    expect(publicRouteOf('/healthz')?.kind).toBe('probe');
    expect(publicRouteOf('/readyz?verbose=1')?.kind).toBe('probe');
    expect(publicRouteOf('/docs')?.kind).toBe('reference');
    expect(publicRouteOf('/docs/openapi.json')?.kind).toBe('reference');
    expect(publicRouteOf('/storage/v1/objects/a?expires=1&signature=x')?.kind).toBe('storage');
  });

  it('asks a key for the API, unknown paths and look-alike names', () => {
    for (const url of ['/api/v2/projects', '/', '/healthz/x', '/docs-x', '/docsx', '/storage', '/storagex/v1', '/api/v2/healthz']) {
      expect(isPublicPath(url)).toBe(false);
    }
  });
});
