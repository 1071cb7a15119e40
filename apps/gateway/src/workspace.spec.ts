import { storageOrigin, workspaceCspDirectives, workspaceSecurityHeaders } from './workspace';

const local = (publicBaseUrl: string) => ({
  driver: 'local' as const,
  local: { rootDir: '/tmp/x', publicBaseUrl, signingSecret: 's'.repeat(16), maxUploadBytes: 1 },
});
const s3 = (over: { endPoint?: string; port?: number; useSSL?: boolean; publicEndpoint?: string }) => ({
  driver: 's3' as const,
  s3: {
    endPoint: 'minio',
    port: undefined,
    useSSL: false,
    accessKey: 'a',
    secretKey: 'b',
    bucket: 'kb-documents',
    region: 'us-east-1',
    publicEndpoint: undefined,
    ...over,
  },
});

describe('review workspace CSP: where the browser may fetch presigned storage URLs', () => {
  it("is the local driver's PUBLIC_BASE_URL origin (its /storage/v1 URLs)", () => {
    expect(storageOrigin(local('http://localhost:8080'))).toBe('http://localhost:8080');
    expect(storageOrigin(local('https://kb.example.com/base'))).toBe('https://kb.example.com');
  });

  it("is the S3 public endpoint the URLs are signed for, with S3_USE_SSL's scheme when it names a host only", () => {
    expect(storageOrigin(s3({ publicEndpoint: 'https://files.example.com' }))).toBe('https://files.example.com');
    expect(storageOrigin(s3({ publicEndpoint: 'files.example.com:9000', useSSL: true }))).toBe('https://files.example.com:9000');
    expect(storageOrigin(s3({ publicEndpoint: 'localhost:9000' }))).toBe('http://localhost:9000');
  });

  it('is the S3 endpoint itself without a public endpoint (port only when set)', () => {
    expect(storageOrigin(s3({ endPoint: 'minio', port: 9000 }))).toBe('http://minio:9000');
    expect(storageOrigin(s3({ endPoint: 's3.eu-west-1.amazonaws.com', useSSL: true }))).toBe('https://s3.eu-west-1.amazonaws.com');
  });

  it('is left out of connect-src when the configured value is no http(s) URL', () => {
    expect(storageOrigin(local('not a url'))).toBeNull();
    expect(workspaceCspDirectives(local('ftp://files'))['connect-src']).toEqual(["'self'"]);
  });

  it("is one header with the app's sources, and no upgrade-insecure-requests (plain-HTTP stacks)", () => {
    const headers = workspaceSecurityHeaders(s3({ publicEndpoint: 'https://files.example.com' }));
    const csp = headers['content-security-policy'];
    expect(csp).toContain("connect-src 'self' https://files.example.com");
    expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    expect(csp).not.toContain("'unsafe-eval'");
    expect(headers['x-content-type-options']).toBe('nosniff');
  });
});
