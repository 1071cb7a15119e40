// Set-up steps shared by `npm start` and `npm test`: npm dependencies, system packages, build.
// Plain Node (no npm dependencies): it runs before `npm ci`.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Prints a step to stderr (stdout stays for results). */
export function step(message) {
  process.stderr.write(`» ${message}\n`);
}

/** Lines of a failed child's output quoted in the error (as tools/lib/stack.mjs quotes a service's log). */
export const FAILURE_TAIL_LINES = 15;
/** Characters of a failed child's output quoted at most (a minified line can be long). */
const FAILURE_TAIL_CHARS = 4000;

/** The last `lines` non-blank lines of `text` (at most 4,000 characters); '' for none. */
export function outputTail(text, lines = FAILURE_TAIL_LINES) {
  return String(text ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-lines)
    .join('\n')
    .slice(-FAILURE_TAIL_CHARS);
}

/**
 * The message of a set-up step whose child process failed, in one shape for every step, e.g.
 * "loading the sample safety corpus failed: `kbctl safety load … --json` exited with code 1; its last output lines:\n…".
 * @param {string} what the step, as its `step()` line says it ("building (proto → TypeScript, tsc)")
 * @param {string} command the command as shown to the user
 * @param {{status: number|null, signal?: string|null, error?: Error}} exit how it ended (spawn's result)
 * @param {string|null} output its stdout and stderr, interleaved as far as known (null when they went to the terminal)
 * @returns {string}
 */
export function childFailureMessage(what, command, exit, output) {
  const how = exit.error ? `could not run (${exit.error.message})` : exit.signal ? `was stopped by signal ${exit.signal}` : `exited with code ${exit.status}`;
  if (output === null) return `${what} failed: \`${command}\` ${how} (its output is above)`;
  const tail = outputTail(output);
  return `${what} failed: \`${command}\` ${how}${tail ? `; its last output lines:\n${tail}` : ' and printed nothing'}`;
}

/**
 * Runs a set-up command to its end (npm install, the build, apt-get, pip), its output going to the
 * terminal as it comes (a first `npm install` or build takes minutes: the user sees its progress).
 * @throws Error from {@link childFailureMessage} (the step, the command and its exit status; its own
 *   output, the reason, is just above on the terminal) when it fails.
 */
function run(cmd, args, { what = `${cmd} ${args[0] ?? ''}`.trim(), ...options } = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], ...options });
  if (r.status !== 0) throw new Error(childFailureMessage(what, [cmd, ...args].join(' '), r, null));
}

/**
 * Runs a child process of a set-up step without blocking this process (the stack's supervisor
 * keeps restarting services meanwhile). Its stderr is relayed to ours as it comes (progress lines);
 * its stdout is returned (a `--json` result).
 * @param {string} what the step, for the failure message
 * @param {string} cmd executable
 * @param {string[]} args
 * @param {{env?: NodeJS.ProcessEnv, show?: string, echo?: boolean}} [o] environment; the command
 *   as shown in a failure (default `cmd args`); echo=false keeps stderr for the failure message only
 * @returns {Promise<string>} its stdout
 * @throws Error from {@link childFailureMessage} when it cannot start, exits non-zero or is killed:
 *   exit status and the last lines of its output (stdout and stderr, in arrival order)
 */
export function runChild(what, cmd, args, o = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
      output += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      output += d;
      if (o.echo !== false) process.stderr.write(d);
    });
    let spawnError;
    child.once('error', (e) => (spawnError = e));
    child.once('close', (status, signal) => {
      if (status === 0) return resolve(stdout);
      reject(new Error(childFailureMessage(what, o.show ?? [cmd, ...args].join(' '), { status, signal, error: spawnError }, output)));
    });
  });
}

/**
 * The files an install depends on, relative to the root: package.json, package-lock.json and the
 * package.json of every npm workspace (the root's `workspaces`, e.g. `packages/*` → packages/sdk,
 * packages/cli), sorted so the list is the same on every machine.
 * @returns {string[]}
 */
export function installInputs() {
  const workspaces = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).workspaces ?? [];
  const dirs = workspaces.flatMap((w) => {
    if (!w.endsWith('/*')) return [w];
    const parent = w.slice(0, -2);
    return existsSync(path.join(ROOT, parent)) ? readdirSync(path.join(ROOT, parent)).map((d) => `${parent}/${d}`) : [];
  });
  const manifests = dirs.map((d) => `${d}/package.json`).filter((f) => existsSync(path.join(ROOT, f)));
  return ['package.json', 'package-lock.json', ...manifests.sort()];
}

/**
 * Installs npm dependencies when node_modules is missing or was installed from other
 * {@link installInputs} (the root package.json, package-lock.json, the workspaces' package.json):
 * a hash stamp in node_modules records which. One install at the root also links the workspaces
 * (node_modules/@kb-platform/sdk → packages/sdk).
 *
 * `npm install` honouring the lockfile is used rather than `npm ci`: some registry mirrors serve
 * only the Linux builds of optional platform packages (LanceDB, Jest's resolver), so the lockfile
 * cannot list the others, and `npm ci` rejects such a lockfile as out of sync.
 */
export function ensureNodeModules() {
  const stamp = path.join(ROOT, 'node_modules/.kb-install-stamp');
  const hash = createHash('sha256');
  for (const f of installInputs()) hash.update(`${f}\0`).update(readFileSync(path.join(ROOT, f)));
  const want = hash.digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  step('installing npm dependencies (npm install, honouring package-lock.json)');
  run('npm', ['install', '--no-audit', '--no-fund'], { what: 'installing npm dependencies' });
  writeFileSync(stamp, want);
}

/**
 * A Python virtualenv for the training scripts (`train:judge`, `train:nli`, `train:answerability`),
 * kept outside the repository at `venv` and filled by pip from the pinned `requirements` file. It is
 * created when missing and installed again when the file's content differs from the stamp
 * (`requirements.installed` in the venv) left by the last install. Returns the venv's `bin/python`.
 * Throws when `python3 -m venv` or pip fails.
 */
export function ensurePythonVenv(venv, requirements) {
  const python = path.join(venv, 'bin/python');
  const pins = readFileSync(requirements, 'utf8').trim();
  const stamp = path.join(venv, 'requirements.installed');
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === pins) return python;
  step(`installing ${path.relative(ROOT, requirements)} into the Python environment ${venv}`);
  mkdirSync(path.dirname(venv), { recursive: true });
  if (!existsSync(python)) run('python3', ['-m', 'venv', venv]);
  run(python, ['-m', 'pip', 'install', '--quiet', '-r', requirements]);
  writeFileSync(stamp, `${pins}\n`);
  return python;
}

function which(cmd) {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/usr/bin', '/usr/local/bin'])) {
    const p = path.join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return null;
}

/**
 * The nats-server the stack runs when Go is installed: built once from the Go module proxy
 * (`ensureGoTool`). Debian bookworm's package is 2.9.10, whose JetStream loses a redelivery handed to a
 * killed worker's pull request that is still open (nats-server#5305, #5338, fixed in 2.10): the work then
 * waits a second ack wait (a check run's requirement taken over 19.9 s after four kills in 10 s, against
 * 10.8 s with this version; test/e2e/launcher-restart.e2e-spec.ts).
 */
export const NATS_SERVER_MODULE = 'github.com/nats-io/nats-server/v2@v2.15.2';

/**
 * The nats-server binary: `KB_NATS_SERVER` when set, else the one built from {@link NATS_SERVER_MODULE} when
 * Go is installed, else null (the system package is used: {@link ensureSystemPackages}).
 */
function preferredNatsServer() {
  if (process.env.KB_NATS_SERVER) return process.env.KB_NATS_SERVER;
  return which('go') ? ensureGoTool('nats-server', NATS_SERVER_MODULE) : null;
}

/**
 * System packages: nats-server (required unless {@link preferredNatsServer} gives one), poppler-utils (PDF
 * text), tesseract (OCR), and with `browser` Debian's chromium (the review workspace's browser tests;
 * optional, skipped without). Installs them with apt-get when running as root on Debian/Ubuntu; otherwise
 * says exactly how.
 * @returns paths of the tools found.
 */
export function ensureSystemPackages({ ocr = true, browser = false } = {}) {
  const builtNats = preferredNatsServer();
  const wanted = [
    ...(builtNats ? [] : [{ cmd: 'nats-server', pkg: 'nats-server', required: true }]),
    { cmd: 'pdftotext', pkg: 'poppler-utils', required: true },
    ...(ocr ? [{ cmd: 'tesseract', pkg: 'tesseract-ocr tesseract-ocr-eng', required: false }] : []),
    // The review workspace's browser tests (test/e2e/support/browser.ts): Debian's Chromium, driven
    // by playwright-core; the tests skip, saying why, where it is missing.
    ...(browser && !process.env.KB_CHROMIUM ? [{ cmd: 'chromium', pkg: 'chromium', required: false }] : []),
  ];
  const missing = wanted.filter((w) => !which(w.cmd));
  if (missing.length > 0) {
    const pkgs = missing.flatMap((m) => m.pkg.split(' '));
    const isRoot = process.getuid?.() === 0;
    if (isRoot && which('apt-get')) {
      step(`installing system packages: ${pkgs.join(' ')}`);
      const apt = ['install', '-y', '-qq', '--no-install-recommends'];
      const aptEnv = { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
      run('apt-get', ['update', '-qq']);
      // Chromium alone may fail (Ubuntu ships it as a snap, which containers cannot install): its
      // tests then skip, saying why. The other packages must install.
      const browserPkg = missing.filter((m) => m.cmd === 'chromium').map((m) => m.pkg);
      const others = pkgs.filter((p) => !browserPkg.includes(p));
      if (others.length > 0) run('apt-get', [...apt, ...others], aptEnv);
      if (browserPkg.length > 0 && spawnSync('apt-get', [...apt, ...browserPkg], { cwd: ROOT, stdio: 'inherit', ...aptEnv }).status !== 0) {
        step('warning: could not install chromium with apt-get; the browser tests of the review workspace are skipped');
      }
    } else {
      const still = missing.filter((m) => m.required);
      const advice =
        `Missing system packages: ${pkgs.join(' ')}.\n` +
        `  Debian/Ubuntu: sudo apt-get install -y ${pkgs.join(' ')}\n` +
        `  macOS:         brew install nats-server poppler tesseract\n` +
        `  Or run the whole stack in containers: docker compose up`;
      if (still.length > 0) throw new Error(advice);
      const consequences = [
        missing.some((m) => m.cmd === 'tesseract') && 'OCR of scanned pages will fail with a message until tesseract is installed',
        missing.some((m) => m.cmd === 'chromium') &&
          'the browser tests of the review workspace are skipped until chromium is installed (or KB_CHROMIUM names a Chromium)',
      ].filter(Boolean);
      step(`warning: ${advice}\n  (${consequences.join('; ')})`);
    }
  }
  if (!builtNats)
    step(
      'note: nats-server from the system packages; one older than 2.10 takes over work from a killed worker only after a second ack wait (install Go to build 2.15, or set KB_NATS_SERVER)',
    );
  return { natsServer: builtNats ?? which('nats-server') };
}

/**
 * Builds a Go command once with `go install` into a per-machine cache (outside the repo, so fresh
 * clones reuse it) and returns its path, or null (with a note) when Go is missing or the build fails.
 * @param {string} name binary name, e.g. 'helm'
 * @param {string} module module path with version, e.g. 'helm.sh/helm/v3/cmd/helm@v3.22.0'
 */
export function ensureGoTool(name, module) {
  const cache = process.env.KB_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/tmp', '.cache'), 'kb-platform');
  const dir = path.join(cache, 'go', module.replace(/[^A-Za-z0-9.@-]+/g, '_'));
  const bin = path.join(dir, name);
  if (existsSync(bin)) return bin;
  if (!which('go')) {
    step(`note: Go is not installed, so ${name} cannot be built; the checks that need it are skipped`);
    return null;
  }
  step(`building ${module} once (cached in ${dir})`);
  const r = spawnSync('go', ['install', module], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, GOBIN: dir, CGO_ENABLED: '0' } });
  return r.status === 0 && existsSync(bin) ? bin : null;
}

/** Generates gRPC code and compiles the TypeScript (incremental). */
export function build() {
  step('building (proto → TypeScript, tsc)');
  run(process.execPath, ['tools/build.mjs'], { what: 'building' });
}

/** Runs a command and returns its stdout, or null when it fails. */
export function tryExec(cmd, args) {
  try {
    return execFileSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}
