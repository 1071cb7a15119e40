#!/usr/bin/env node
// Build: ts-proto code generation, then one incremental tsc over apps/ and libs/ into dist/,
// then tsc-alias rewrites the @kb/* path aliases to relative imports.
import { spawnSync } from 'node:child_process';
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
