#!/usr/bin/env node
// `npm run openapi`: builds, then writes the OpenAPI 3.1 document the gateway serves at
// /docs/openapi.json to dist/openapi.json (or the path given as first argument), without any
// backing service running (apps/gateway/src/reference.ts). `--no-build` skips the build (tools/build.mjs
// runs it so). `--update` (`npm run openapi:update`) also writes the committed copy,
// openapi/openapi.json (COMMITTED_REFERENCE), which a unit test (apps/gateway/src/reference.spec.ts)
// keeps equal to what the code builds: run it after an API change and commit the result.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (!process.argv.includes('--no-build')) {
  const r = spawnSync(process.execPath, [path.join(root, 'tools/build.mjs')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const out = path.resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? path.join(root, 'dist/openapi.json'));
const { buildGatewayReference, serializeReference, COMMITTED_REFERENCE } = createRequire(import.meta.url)(
  path.join(root, 'dist/apps/gateway/src/reference.js'),
);
const doc = await buildGatewayReference();
const text = serializeReference(doc);
const targets = [out, ...(process.argv.includes('--update') ? [path.join(root, COMMITTED_REFERENCE)] : [])];
for (const file of targets) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  process.stdout.write(
    `${path.relative(process.cwd(), file) || file}: OpenAPI ${doc.openapi}, ${Object.keys(doc.paths).length} paths, ${Object.keys(doc.webhooks ?? {}).length} webhooks\n`,
  );
}
