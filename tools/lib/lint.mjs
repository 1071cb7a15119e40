// The format check (Prettier) and the lint (ESLint: typescript-eslint's type-checked rules and Nx's
// module boundaries, eslint.config.mjs), for `npm run lint`, `npm run format` and `npm test`.
// Both cache their results in node_modules/.cache (dropped with node_modules, so a new dependency
// set starts cold): a file whose content has not changed is not checked again.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './bootstrap.mjs';
import { FIRST_LINE_NODE } from './node-runtime.mjs';

const bin = (name) => path.join(ROOT, 'node_modules/.bin', name);
const CACHE = path.join(ROOT, 'node_modules/.cache');
/** What ESLint lints: every project and the repository's scripts. */
export const LINTED = ['apps', 'libs', 'packages', 'test', 'tools'];

/**
 * Why `npm test` skips the lint and format check on this machine, or null when it runs them. They run on CI's first
 * line (Node {@link FIRST_LINE_NODE}+) only: the second line (Node 22) would only repeat them.
 */
export function lintSkipReason() {
  if (process.env.KB_SKIP_LINT) return 'KB_SKIP_LINT is set';
  const major = Number(process.versions.node.split('.')[0]);
  if (major < FIRST_LINE_NODE) return `Node.js ${process.versions.node}: lint and format check run on Node ${FIRST_LINE_NODE}+ only (CI's first line)`;
  return null;
}

function run(cmd, args, env = {}) {
  const started = Date.now();
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
  return { ok: r.status === 0, seconds: ((Date.now() - started) / 1000).toFixed(1) };
}

/** Prettier over the tree (.prettierignore says what it skips); `write` formats instead of checking. Returns whether it passed. */
export function format({ write = false } = {}) {
  const r = run(bin('prettier'), [
    write ? '--write' : '--check',
    '--log-level',
    write ? 'warn' : 'log',
    '--cache',
    '--cache-strategy',
    'content',
    '--cache-location',
    path.join(CACHE, 'prettier/cache.json'),
    '.',
  ]);
  if (!r.ok && !write)
    process.stderr.write('\nformat check failed: the files above are not formatted as Prettier formats them; run `npm run format` (then commit).\n');
  return r.ok;
}

/**
 * ESLint over {@link LINTED}. Needs the build's generated sources (libs/proto/src/gen, the SDK's
 * src/generated, the SDK's dist for the CLI), which the type-checked rules read. Computes Nx's
 * project graph first (without it @nx/enforce-module-boundaries skips itself with a warning),
 * from scratch (a few seconds): Nx's cached file map can keep a file's imports from before it
 * changed, or before a project.json appeared, and the rule would report those.
 * Returns whether it passed (no error, no warning).
 */
export function lint({ fix = false, extra = [] } = {}) {
  const env = { NX_DAEMON: 'false' };
  rmSync(path.join(ROOT, '.nx/workspace-data'), { recursive: true, force: true });
  const graph = spawnSync(bin('nx'), ['show', 'projects'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...env } });
  if (graph.status !== 0) {
    process.stderr.write('lint: could not compute the Nx project graph (see above)\n');
    return false;
  }
  const args = [
    '--max-warnings',
    '0',
    '--cache',
    '--cache-strategy',
    'content',
    '--cache-location',
    path.join(CACHE, 'eslint/'),
    ...(fix ? ['--fix'] : []),
    ...extra,
    ...LINTED,
  ];
  const r = run(bin('eslint'), args, env);
  if (!r.ok) process.stderr.write(`\nlint failed (${r.seconds} s): fix the problems above (\`npm run lint -- --fix\` fixes some by itself).\n`);
  else process.stdout.write(`lint: clean (${r.seconds} s)\n`);
  return r.ok;
}
