#!/usr/bin/env node
// Build: ts-proto code generation, then one incremental tsc over apps/ and libs/ into dist/,
// then tsc-alias rewrites the @kb/* path aliases to relative imports. Then the client packages:
// the OpenAPI document (dist/openapi.json, tools/openapi.mjs), the SDK's types generated from it
// (openapi-typescript) and packages/sdk (CommonJS, plus its browser entry as ES modules in
// dist/esm) and packages/cli compiled into their own dist/; last the review workspace (apps/web)
// with Vite into dist/web.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules/.bin', name);
function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
run(process.execPath, [path.join(root, 'tools/proto-gen.mjs')]);
run(bin('tsc'), ['-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo']);
run(bin('tsc-alias'), ['-p', 'tsconfig.build.json']);

// Client packages: npm workspaces of the root package.json (`"workspaces": ["packages/*"]`), so the
// root's `npm install` links the SDK as node_modules/@kb-platform/sdk, where the CLI (and
// packages/sdk/examples) find it, and installs the CLI's own dependencies. The service's Docker
// image ships no clients (it copies only the SDK's sources, for the workspace below, not its
// package.json, so its npm install sees no workspace either): skipped there.
if (existsSync(path.join(root, 'packages/sdk/package.json'))) buildClients();
else if (existsSync(path.join(root, 'apps/web/index.html')) && existsSync(path.join(root, 'packages/sdk/scripts/generate.mjs'))) {
  // The image: only the SDK's generated sources the workspace needs, from the committed document
  // (openapi/openapi.json, which apps/gateway/src/reference.spec.ts keeps equal to the code's).
  const r = spawnSync(process.execPath, [path.join(root, 'packages/sdk/scripts/generate.mjs')], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, KB_OPENAPI_FILE: path.join(root, 'openapi/openapi.json') },
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/**
 * The OpenAPI document, the SDK (generated types, tsc) and the CLI (which imports the built SDK
 * through node_modules/@kb-platform/sdk). Exits 1, saying to run `npm install`, when that link is
 * missing (node_modules installed before the root declared the workspaces).
 */
function buildClients() {
  if (!existsSync(path.join(root, 'node_modules/@kb-platform/sdk/package.json'))) {
    console.error('build: node_modules/@kb-platform/sdk is missing (the npm workspace link to packages/sdk): run `npm install` at the repository root');
    process.exit(1);
  }
  const quiet = spawnSync(process.execPath, [path.join(root, 'tools/openapi.mjs'), '--no-build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (quiet.status !== 0) process.exit(quiet.status ?? 1);
  run(process.execPath, [path.join(root, 'packages/sdk/scripts/generate.mjs')]);
  run(bin('tsc'), ['-p', 'packages/sdk/tsconfig.json']);
  // Its browser entry again as ES modules (dist/esm: `@kb-platform/sdk/browser` for bundlers).
  run(process.execPath, [path.join(root, 'packages/sdk/scripts/build-esm.mjs')]);
  run(bin('tsc'), ['-p', 'packages/cli/tsconfig.json']);
}

// The review workspace (apps/web, issue 31): a Vite build into dist/web, served by the gateway at
// /app/. It takes the SDK from source through its browser entry (packages/sdk/src/browser.ts), whose
// imports of the generated types are type-only (dropped by Vite): the Docker image builds it too.
if (existsSync(path.join(root, 'apps/web/index.html'))) run(bin('vite'), ['build', '--config', 'apps/web/vite.config.mts']);
