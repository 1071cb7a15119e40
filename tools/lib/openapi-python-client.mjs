#!/usr/bin/env node
// openapi-python-client and mypy (PyPI, pinned) in a Python venv of the per-machine cache
// (~/.cache/kb-platform/venv-openapi-python-client-<version>, or $KB_TOOLS_CACHE/…): created and
// filled by pip once, then reused, as tools/lib/schemathesis.mjs does for schemathesis. The second
// client generator of the OpenAPI document (the SDK uses openapi-typescript): test/tools/openapi-clients.spec.ts
// generates a Python client with it and type-checks it with `mypy --strict`.
// `node tools/lib/openapi-python-client.mjs ensure` prints the venv's bin folder (exit 0), or the
// reason it is unavailable on stderr (exit 2 when PyPI cannot be reached, 1 on any other failure).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned versions (the latest releases when the check was added). */
export const OPENAPI_PYTHON_CLIENT_VERSION = '0.29.1';
export const MYPY_VERSION = '2.4.1';

/** pip output meaning "could not reach the index" (as in tools/lib/schemathesis.mjs). */
const UNREACHABLE = /from versions: none|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|Failed to establish a new connection|NewConnectionError|Temporary failure in name resolution|Name or service not known|Read timed out|ConnectTimeout|ProxyError/i;

function cacheDir() {
  return process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/tmp', '.cache'), 'kb-platform');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/**
 * The bin folder of the cached venv (holding `openapi-python-client`, `mypy` and `python`), installed on first use.
 * @returns {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}}
 */
export function ensureOpenapiPythonClient() {
  const venv = path.join(cacheDir(), `venv-openapi-python-client-${OPENAPI_PYTHON_CLIENT_VERSION}-mypy-${MYPY_VERSION}`);
  const bin = path.join(venv, 'bin');
  if (existsSync(path.join(bin, 'openapi-python-client')) && existsSync(path.join(bin, 'mypy'))) return { ok: true, bin };
  process.stderr.write(`» installing openapi-python-client ${OPENAPI_PYTHON_CLIENT_VERSION} and mypy ${MYPY_VERSION} once (PyPI, cached in ${venv})\n`);
  const created = run('python3', ['-m', 'venv', venv]);
  if (!created.ok) return { ok: false, unreachable: false, reason: `python3 -m venv failed: ${created.output.trim().slice(-500)}` };
  const specs = [`openapi-python-client==${OPENAPI_PYTHON_CLIENT_VERSION}`, `mypy==${MYPY_VERSION}`];
  const pip = run(path.join(bin, 'pip'), ['install', '--disable-pip-version-check', '-q', ...specs]);
  if (!pip.ok || !existsSync(path.join(bin, 'openapi-python-client'))) {
    spawnSync('rm', ['-rf', venv]);
    return { ok: false, unreachable: UNREACHABLE.test(pip.output), reason: `pip install ${specs.join(' ')} failed: ${pip.output.trim().slice(-500)}` };
  }
  return { ok: true, bin };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'ensure') {
  const r = ensureOpenapiPythonClient();
  if (r.ok) process.stdout.write(`${r.bin}\n`);
  else process.stderr.write(`${r.reason}\n`);
  process.exit(r.ok ? 0 : r.unreachable ? 2 : 1);
}
