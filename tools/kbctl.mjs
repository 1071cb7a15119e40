#!/usr/bin/env node
// `npm run --silent kbctl -- <command> --json`: the operator CLI against DATABASE_URL, or against
// the local stack started by `npm start` (its address is read from .data/stack.json).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './lib/bootstrap.mjs';

const cli = path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js');
if (!existsSync(cli)) spawnSync(process.execPath, [path.join(ROOT, 'tools/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
const env = { ...process.env };
if (!env.DATABASE_URL) {
  const state = path.join(path.resolve(process.env.KB_DATA_DIR ?? path.join(ROOT, '.data')), 'stack.json');
  if (existsSync(state)) {
    const stack = JSON.parse(readFileSync(state, 'utf8'));
    env.DATABASE_URL = stack.databaseUrl;
    // kbctl tells the running gateways about revoked keys and quota changes through NATS.
    if (!env.NATS_URL && stack.ports?.nats) env.NATS_URL = `nats://127.0.0.1:${stack.ports.nats}`;
  }
}
const r = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
