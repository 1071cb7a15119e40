import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { axeViolations, describeBrowser, describeViolations, openWorkspace, type Workspace } from './support/browser';
import { baseUrl, newOrg, ROOT, spawnGateway, stopChild } from './support/harness';

jest.setTimeout(120_000);

/**
 * The review workspace (issue 31) as the gateway serves it at /app/ (docs/gateway.md "Review
 * workspace"): the built app of dist/web, without an API key, with its own security headers and
 * caching, the API unchanged beside it; then the page in a real Chromium, checked with axe.
 */
describe('review workspace: static serving at /app/', () => {
  const agent = () => request(baseUrl());
  const builtIndex = readFileSync(path.join(ROOT, 'dist/web/index.html'), 'utf8');
  const assetPaths = [...builtIndex.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+)"/g)].map((m) => m[1]);

  it('serves index.html at /app/ without an API key, revalidated at every use, with the workspace CSP', async () => {
    const res = await agent().get('/app/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toBe(builtIndex);
    expect(res.text).toContain('<title>Review workspace · kb-platform</title>');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['etag']).toBeTruthy();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toBeTruthy();
    // No key, so no rate limit either.
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    const csp = Object.fromEntries(
      String(res.headers['content-security-policy'])
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    expect(csp['default-src']).toEqual(["'self'"]);
    expect(csp['script-src']).toEqual(["'self'", "'wasm-unsafe-eval'"]);
    expect(csp['frame-ancestors']).toEqual(["'none'"]);
    expect(csp['object-src']).toEqual(["'none'"]);
    expect(csp['worker-src']).toEqual(["'self'", 'blob:']);
    // Presigned storage URLs of the local driver are on PUBLIC_BASE_URL (http://localhost:<gateway port>).
    expect(csp['connect-src']).toEqual(["'self'", `http://localhost:${new URL(baseUrl()).port}`]);
    expect(csp['upgrade-insecure-requests']).toBeUndefined();
  });

  it('answers a deep link of the app (no file extension) with index.html, and HEAD like GET', async () => {
    for (const route of ['/app/projects/x', '/app/projects/0b6f5a1e-2d7c-4c1e-9f51-3a2f1e9c7d10/runs/42', '/app/sign-in?next=%2Fapp%2Fprojects']) {
      const res = await agent().get(route);
      expect([route, res.status, res.headers['cache-control'], res.text]).toEqual([route, 200, 'no-cache', builtIndex]);
    }
    const head = await agent().head('/app/projects/x');
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toMatch(/^text\/html/);
  });

  it('redirects /app to /app/, keeping the query string', async () => {
    const res = await agent().get('/app');
    expect([res.status, res.headers.location]).toEqual([301, '/app/']);
    const withQuery = await agent().get('/app?project=p1');
    expect([withQuery.status, withQuery.headers.location]).toEqual([301, '/app/?project=p1']);
  });

  it('serves the hashed assets as immutable for a year, and answers a revalidation with 304', async () => {
    expect(assetPaths.length).toBeGreaterThanOrEqual(2);
    for (const asset of assetPaths) {
      const res = await agent().get(asset);
      expect([asset, res.status, res.headers['cache-control']]).toEqual([asset, 200, 'public, max-age=31536000, immutable']);
      expect(res.headers['content-type']).toMatch(asset.endsWith('.css') ? /^text\/css/ : /^(text|application)\/javascript/);
      const again = await agent().get(asset).set('If-None-Match', res.headers['etag']);
      expect([asset, again.status]).toEqual([asset, 304]);
    }
  });

  it("serves the app's other files (its icon) revalidated at every use", async () => {
    const icon = await agent().get('/app/favicon.svg');
    expect([icon.status, icon.headers['content-type'], icon.headers['cache-control']]).toEqual([200, expect.stringMatching(/^image\/svg\+xml/), 'no-cache']);
  });

  it('answers 404 NOT_FOUND in the error envelope for a missing file, never index.html', async () => {
    for (const missing of ['/app/assets/index-missing.js', '/app/assets/deep/route', '/app/favicon.ico', '/app/.env', '/app/projects/report.pdf']) {
      const res = await agent().get(missing);
      expect([missing, res.status, res.body?.error?.code]).toEqual([missing, 404, 'NOT_FOUND']);
      expect(res.text).not.toContain('<html');
    }
    // A folder is not listed, and paths that climb out of the folder are refused, whatever their spelling.
    for (const refused of ['/app/assets/', '/app/assets/..%2f..%2f..%2fpackage.json', '/app/%2e%2e/%2e%2e/package.json', '/app/..%5c..%5cpackage.json']) {
      const res = await agent().get(refused);
      expect([refused, res.status, res.body?.error?.code]).toEqual([refused, expect.any(Number), expect.stringMatching(/^(NOT_FOUND|FORBIDDEN)$/)]);
      expect([refused, res.status]).toEqual([refused, res.body.error.code === 'NOT_FOUND' ? 404 : 403]);
      expect(res.text).not.toContain('"kb-platform"');
    }
  });

  it('answers other methods on /app/ with 404, without asking for a key', async () => {
    const res = await agent().post('/app/projects').send({ a: 1 });
    expect([res.status, res.body?.error?.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('leaves the API as it was: /api/v2 still needs a key, and the OpenAPI document has no /app path', async () => {
    const noKey = await agent().get('/api/v2/organization');
    expect([noKey.status, noKey.body.error.code]).toEqual([401, 'UNAUTHORIZED']);
    expect(noKey.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    const { key } = newOrg('Workspace Serving Org');
    const withKey = await agent().get('/api/v2/organization').set('Authorization', `Bearer ${key}`);
    expect(withKey.status).toBe(200);
    expect(withKey.headers['x-ratelimit-limit']).toBeTruthy();
    const openapi = await agent().get('/docs/openapi.json');
    expect(openapi.status).toBe(200);
    expect(Object.keys(openapi.body.paths).filter((p) => p.startsWith('/app'))).toEqual([]);
  });
});

describe('review workspace: a gateway whose workspace is not built', () => {
  let child: ChildProcess | undefined;
  let url: string;
  let stderr = '';
  const emptyDir = mkdtempSync(path.join(os.tmpdir(), 'kb-web-missing-'));

  beforeAll(async () => {
    ({ child, url } = await spawnGateway(
      {
        GATEWAY_WORKSPACE_DIR: emptyDir,
        PUBLIC_BASE_URL: 'https://files.example.test:8443/',
        METRICS_ENABLED: 'false',
        OTEL_SDK_DISABLED: 'true',
        LOG_LEVEL: 'warn',
      },
      ['ignore', 'pipe', 'pipe'],
    ));
    child.stdout!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode}: ${stderr}`);
      if (
        await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`gateway did not start: ${stderr}`);
  });
  afterAll(async () => {
    if (child) await stopChild(child);
    rmSync(emptyDir, { recursive: true, force: true });
  });

  it('starts, warns once, and answers /app/ and its routes with 404 saying the workspace is not built', async () => {
    for (const route of ['/app/', '/app/projects/x', '/app/assets/index.js']) {
      const res = await request(url).get(route);
      expect([route, res.status, res.body?.error?.code]).toEqual([route, 404, 'NOT_FOUND']);
      expect(res.body.error.message).toMatch(/not built.*node tools\/build\.mjs/);
    }
    expect((await request(url).get('/app')).headers.location).toBe('/app/');
    expect((await request(url).get('/healthz')).status).toBe(200);
    expect(stderr).toMatch(/review workspace not built/);
  });

  it('derives connect-src from the configured storage URL (PUBLIC_BASE_URL here)', async () => {
    const res = await request(url).get('/app/');
    expect(res.headers['content-security-policy']).toMatch(/connect-src 'self' https:\/\/files\.example\.test:8443(;|$)/);
  });
});

describeBrowser('review workspace in Chromium', () => {
  let workspace: Workspace;
  beforeAll(async () => {
    workspace = await openWorkspace('/app/');
  });
  afterAll(async () => {
    await workspace?.browser.close();
  });

  it('renders the app under its CSP: title, content in #root, no console error, no failed request', async () => {
    const { page, problems } = workspace;
    expect(await page.title()).toBe('Review workspace · kb-platform');
    // The app has rendered: #root shows some text (whatever its first screen is).
    await page.locator('#root').filter({ hasText: /\S/ }).waitFor({ timeout: 10_000 });
    expect((await page.locator('#root').innerText()).trim()).not.toBe('');
    expect(problems).toEqual({ consoleErrors: [], failedRequests: [] });
  });

  it('renders a deep link too (the SPA fallback in a browser)', async () => {
    const deep = await openWorkspace('/app/projects/x');
    try {
      expect(await deep.page.title()).toBe('Review workspace · kb-platform');
      expect(deep.problems).toEqual({ consoleErrors: [], failedRequests: [] });
    } finally {
      await deep.browser.close();
    }
  });

  it('has no serious or critical accessibility violation (axe)', async () => {
    const violations = await axeViolations(workspace.page, { impact: ['serious', 'critical'] });
    expect(describeViolations(violations)).toEqual([]);
  });
});
