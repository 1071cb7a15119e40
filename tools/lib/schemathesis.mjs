#!/usr/bin/env node
// schemathesis (PyPI, pinned) in a Python venv of the per-machine cache
// (~/.cache/kb-platform/venv-schemathesis-<version>, or $KB_TOOLS_CACHE/…): created and filled by
// pip once, then reused. `node tools/lib/schemathesis.mjs ensure` prints the path of its
// `schemathesis` command (exit 0), or the reason it is unavailable on stderr (exit 2 when PyPI
// cannot be reached, 1 on any other failure). Used by test/e2e/schemathesis.e2e-spec.ts.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned version (the one of the issue-15 probe's 4.32 line). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** pip output meaning "could not reach the index" (as in tools/lib/llm-server.mjs). */
const UNREACHABLE = /from versions: none|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|Failed to establish a new connection|NewConnectionError|Temporary failure in name resolution|Name or service not known|Read timed out|ConnectTimeout|ProxyError/i;

function cacheDir() {
  return process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/tmp', '.cache'), 'kb-platform');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/**
 * The `schemathesis` command of the cached venv, installed on first use.
 * @returns {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}}
 */
export function ensureSchemathesis() {
  const venv = path.join(cacheDir(), `venv-schemathesis-${SCHEMATHESIS_VERSION}`);
  const bin = path.join(venv, 'bin', 'schemathesis');
  if (existsSync(bin)) return { ok: true, bin };
  process.stderr.write(`» installing schemathesis ${SCHEMATHESIS_VERSION} once (PyPI, cached in ${venv})\n`);
  const created = run('python3', ['-m', 'venv', venv]);
  if (!created.ok) return { ok: false, unreachable: false, reason: `python3 -m venv failed: ${created.output.trim().slice(-500)}` };
  const pip = run(path.join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '-q', `schemathesis==${SCHEMATHESIS_VERSION}`]);
  if (!pip.ok || !existsSync(bin)) {
    spawnSync('rm', ['-rf', venv]);
    return { ok: false, unreachable: UNREACHABLE.test(pip.output), reason: `pip install schemathesis==${SCHEMATHESIS_VERSION} failed: ${pip.output.trim().slice(-500)}` };
  }
  return { ok: true, bin };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'ensure') {
  const r = ensureSchemathesis();
  if (r.ok) process.stdout.write(`${r.bin}\n`);
  else process.stderr.write(`${r.reason}\n`);
  process.exit(r.ok ? 0 : r.unreachable ? 2 : 1);
}
