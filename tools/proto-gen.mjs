#!/usr/bin/env node
// Generates TypeScript from proto/ with ts-proto (grpc-js services) into libs/proto/src/gen.
// Generated code is built, not committed (see .gitignore). Run by `npm run build` and the test runner.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const protoDir = path.join(root, 'proto');
const outDir = path.join(root, 'libs/proto/src/gen');

function findProtos(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? findProtos(p) : name.endsWith('.proto') ? [p] : [];
  });
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const plugin = path.join(root, 'node_modules/.bin/protoc-gen-ts_proto');
const options = ['outputServices=grpc-js', 'esModuleInterop=true', 'forceLong=number', 'useOptionals=none', 'env=node', 'outputIndex=false'].join(',');
execFileSync(
  process.execPath,
  [
    path.join(root, 'node_modules/protoc/protoc.cjs'),
    `--plugin=protoc-gen-ts_proto=${plugin}`,
    `--ts_proto_out=${outDir}`,
    `--ts_proto_opt=${options}`,
    `--proto_path=${protoDir}`,
    ...findProtos(protoDir).map((p) => path.relative(protoDir, p)),
  ],
  { cwd: protoDir, stdio: 'inherit' },
);
console.error(`proto-gen: wrote ${path.relative(root, outDir)}`);
