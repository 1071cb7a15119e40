// Python tools from PyPI, pinned, each in a venv of the per-machine cache
// (~/.cache/kb-platform/venv-<name>, or $KB_TOOLS_CACHE/…): created and filled by pip once, then
// reused by every run and every fresh clone on the machine. The one way the project installs a
// Python tool for its tests (schemathesis, openapi-python-client + mypy); the `ensure` command of
// each tool's module prints what the tests need, or why the tool is unavailable.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/** pip output meaning "could not reach the index" (as in tools/lib/llm-server.mjs). */
const UNREACHABLE =
  /from versions: none|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|Failed to establish a new connection|NewConnectionError|Temporary failure in name resolution|Name or service not known|Read timed out|ConnectTimeout|ProxyError/i;

function cacheDir() {
  return process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/tmp', '.cache'), 'kb-platform');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/**
 * The bin folder of the cached venv `venv-<name>` holding `commands`, created with `python3 -m venv`
 * and filled with `pip install <specs>` on first use (a failed install leaves no venv behind).
 * @param {string} name folder suffix; carry the pinned versions in it, so a new pin gets a new venv
 * @param {string[]} specs pip requirement specifiers, e.g. ['schemathesis==4.32.5']
 * @param {string[]} commands the executables the venv must end up with (checked in its bin folder)
 * @returns {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}} `unreachable`: PyPI could not be reached
 */
export function ensureVenv(name, specs, commands) {
  const venv = path.join(cacheDir(), `venv-${name}`);
  const bin = path.join(venv, 'bin');
  const complete = () => commands.every((c) => existsSync(path.join(bin, c)));
  if (complete()) return { ok: true, bin };
  process.stderr.write(`» installing ${specs.join(' ')} once (PyPI, cached in ${venv})\n`);
  const created = run('python3', ['-m', 'venv', venv]);
  if (!created.ok) return { ok: false, unreachable: false, reason: `python3 -m venv failed: ${created.output.trim().slice(-500)}` };
  const pip = run(path.join(bin, 'pip'), ['install', '--disable-pip-version-check', '-q', ...specs]);
  if (!pip.ok || !complete()) {
    spawnSync('rm', ['-rf', venv]);
    return { ok: false, unreachable: UNREACHABLE.test(pip.output), reason: `pip install ${specs.join(' ')} failed: ${pip.output.trim().slice(-500)}` };
  }
  return { ok: true, bin };
}

/**
 * The `ensure` command of a tool module: prints `found(bin)` (exit 0), or the reason on stderr
 * (exit 2 when PyPI cannot be reached, 1 on any other failure).
 * @param {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}} r the result of {@link ensureVenv}
 * @param {(bin: string) => string} found what to print on success
 */
export function reportEnsure(r, found) {
  if (r.ok) process.stdout.write(`${found(r.bin)}\n`);
  else process.stderr.write(`${r.reason}\n`);
  process.exit(r.ok ? 0 : r.unreachable ? 2 : 1);
}
