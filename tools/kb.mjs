#!/usr/bin/env node
// `npm run --silent kb -- <command>`: the `kb` command line (packages/cli) from a checkout, built on
// first use. Without KB_BASE_URL / KB_API_KEY (and no profile chosen or saved as `default`) it uses
// the local stack of `npm start` (the address in .data/stack.json, the demo key in .data/demo.json),
// like kbctl uses its database.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './lib/bootstrap.mjs';

const cli = path.join(ROOT, 'packages/cli/dist/main.js');
if (!existsSync(cli)) spawnSync(process.execPath, [path.join(ROOT, 'tools/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
const env = { ...process.env };
const dataDir = path.resolve(process.env.KB_DATA_DIR ?? path.join(ROOT, '.data'));
const read = (name) => {
  try {
    return JSON.parse(readFileSync(path.join(dataDir, name), 'utf8'));
  } catch {
    return null;
  }
};
// A profile (`--profile`, KB_PROFILE, or a `default` one saved by `kb login`) is the user's choice:
// the local stack's values would override it (environment > profile), so they are not set then.
const configFile = path.join(
  env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config'),
  'kb',
  'config.json',
);
let hasDefaultProfile = false;
try {
  hasDefaultProfile = Object.hasOwn(JSON.parse(readFileSync(configFile, 'utf8')).profiles ?? {}, 'default');
} catch {}
const profileChosen = !!env.KB_PROFILE || process.argv.slice(2).some((a) => a === '--profile' || a.startsWith('--profile=')) || hasDefaultProfile;
if (!profileChosen) {
  if (!env.KB_BASE_URL) env.KB_BASE_URL = read('stack.json')?.baseUrl ?? '';
  if (!env.KB_API_KEY) env.KB_API_KEY = read('demo.json')?.key ?? '';
}
for (const name of ['KB_BASE_URL', 'KB_API_KEY']) if (!env[name]) delete env[name];
const r = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
