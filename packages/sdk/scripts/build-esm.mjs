#!/usr/bin/env node
// The ES module build of the browser entry (src/browser.ts → dist/esm), after the CommonJS build
// (tsc -p tsconfig.json, which also writes the declarations both builds share):
// 1. tsc -p tsconfig.esm.json: only the modules browser.ts reaches, without Node's types;
// 2. tsc-alias --resolve-full-paths: `./client` → `./client.js` (ES modules need the extension:
//    Node and webpack's fully specified resolution refuse bare relative specifiers);
// 3. dist/esm/package.json {"type":"module"}, so Node reads the .js files there as ES modules.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const tsconfig = path.join(root, 'tsconfig.esm.json');
for (const [bin, args] of [
  [require.resolve('typescript/bin/tsc'), ['-p', tsconfig]],
  [require.resolve('tsc-alias/dist/bin/index.js'), ['-p', tsconfig, '--resolve-full-paths']],
]) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
writeFileSync(path.join(root, 'dist/esm/package.json'), '{ "type": "module" }\n');
