import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { baseUrl, newOrg, ROOT } from './support/harness';

jest.setTimeout(900_000);

/**
 * One fenced block of README.md to run: its ```bash body in document order, what the HTML comment
 * on the line before it asks (`<!-- readme-test: skip … -->`, `<!-- readme-test: cites FILE -->`),
 * and the line it starts on (for failure messages).
 */
export interface ReadmeBlock {
  line: number;
  code: string;
  skip: boolean;
  /** File names the block's output must cite (`"file_name": "FILE"` in its JSON or SSE output). */
  cites: string[];
}

/**
 * The ```bash blocks of a Markdown text, in order. Blocks fenced as ```console, ```text or anything
 * else are meant to be read, not run. Markers: the last non-blank line before a block may be one
 * HTML comment `<!-- readme-test: skip (why) -->` (not run: e.g. `npm start`) or
 * `<!-- readme-test: cites FILE [FILE…] -->` (its output must cite each FILE).
 * @throws Error on an unknown `readme-test:` marker or an unclosed fence.
 */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const fence = open[1];
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== fence) end++;
    if (end >= lines.length) throw new Error(`README.md line ${i + 1}: unclosed code fence`);
    if (open[2] === 'bash') {
      let prev = i - 1;
      while (prev >= 0 && lines[prev].trim() === '') prev--;
      const marker = prev >= 0 ? /^<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->$/.exec(lines[prev].trim()) : null;
      if (marker && !['skip', 'cites'].includes(marker[1])) throw new Error(`README.md line ${prev + 1}: unknown readme-test marker "${marker[1]}"`);
      blocks.push({
        line: i + 1,
        code: lines.slice(i + 1, end).join('\n'),
        skip: marker?.[1] === 'skip',
        cites: marker?.[1] === 'cites' ? marker[2].split(/\s+/).filter(Boolean) : [],
      });
    }
    i = end;
  }
  return blocks;
}

/** Output of each block run in one bash session, and how the session ended. */
interface SessionResult {
  outputs: string[];
  exitCode: number | null;
  stderr: string;
}

/**
 * Runs `blocks` in order in ONE bash process (variables and functions carry over), with `set -e -o
 * pipefail` so that any failing command ends the session, and a marker line on stdout between blocks
 * to split the output per block. cwd = the repository root.
 */
function runSession(blocks: string[], env: NodeJS.ProcessEnv): Promise<SessionResult> {
  const token = `@@readme-block-${process.pid}-${Date.now()}`;
  const script = ['set -e -o pipefail', ...blocks.flatMap((code, i) => [`echo "${token} ${i}"`, code, ''])].join('\n');
  return new Promise((resolve, reject) => {
    const bash = spawn('bash', ['--noprofile', '--norc', '-s'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    bash.stdout.on('data', (d) => (stdout += d));
    bash.stderr.on('data', (d) => (stderr += d));
    bash.on('error', reject);
    bash.on('close', (exitCode) => {
      const outputs: string[] = [];
      for (const part of stdout.split(`${token} `).slice(1)) {
        const nl = part.indexOf('\n');
        outputs[Number(part.slice(0, nl))] = part.slice(nl + 1);
      }
      resolve({ outputs, exitCode, stderr });
    });
    bash.stdin.end(script + '\n');
  });
}

describe('README.md: every bash block runs, in order, in one shell, against a fresh stack', () => {
  const blocks = readmeBlocks(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));

  it('never runs a block that would start, test or install the project: those must be marked skip', () => {
    // Such a block would start a second stack, re-enter npm test or reinstall node_modules.
    const unsafe = blocks.filter((b) => !b.skip && /\bnpm (?:start|test|install|ci)\b/.test(b.code));
    expect(unsafe.map((b) => `README.md line ${b.line}`)).toEqual([]);
  });

  it('finds the walk-through and the markers', () => {
    expect(blocks.filter((b) => !b.skip).length).toBeGreaterThanOrEqual(8);
    expect(blocks.some((b) => b.skip && /npm start/.test(b.code))).toBe(true);
    expect(blocks.some((b) => b.cites.length > 0)).toBe(true);
  });

  it('runs each block with exit 0, and each answer the README promises cites its document', async () => {
    // A fresh organization as `npm start` makes it (the Safety Assistant on), so the walk-through's
    // safety-sounding question goes through routing exactly as for a new user.
    const org = newOrg('README walk-through', { safety: true });
    // …and the sample safety corpus loaded, as `npm start` does (idempotent).
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'safety', 'load', path.join(ROOT, 'samples/safety-corpus'), '--json'],
      {
        env: { ...process.env, DATABASE_URL: process.env.KB_E2E_DATABASE_URL!, KB_DATA_DIR: process.env.KB_E2E_DATA_DIR! },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const env = {
      ...process.env,
      KB_BASE_URL: baseUrl(),
      KB_API_KEY: org.key,
      KEY: org.key,
      // kbctl examples reach this suite's stack, not a developer's .data/.
      DATABASE_URL: process.env.KB_E2E_DATABASE_URL!,
      NATS_URL: process.env.KB_E2E_NATS_URL ?? '',
      KB_DATA_DIR: process.env.KB_E2E_DATA_DIR!,
    };
    const run = blocks.filter((b) => !b.skip);
    if (run.some((b) => /\bnpm (?:start|test|install|ci)\b/.test(b.code)))
      throw new Error('a README block that starts, tests or installs the project is not marked skip (see the test above)');
    const result = await runSession(
      run.map((b) => b.code),
      env,
    );
    // The session's transcript, kept with the suite's data folder (KB_E2E_KEEP_DATA=1 keeps it).
    const transcript = run.map((b, i) => `### README.md line ${b.line}\n${b.code}\n--- output ---\n${result.outputs[i] ?? '(not run)'}`).join('\n');
    writeFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'readme-transcript.txt'), `${transcript}\n--- stderr ---\n${result.stderr}`);
    const ran = result.outputs.length;
    const failed = result.exitCode === 0 ? null : run[ran - 1];
    expect({
      failedBlockAtLine: failed?.line ?? null,
      exitCode: result.exitCode,
      output: failed ? result.outputs[ran - 1]?.slice(-3000) : undefined,
      stderr: failed ? result.stderr.slice(-3000) : undefined,
    }).toEqual({ failedBlockAtLine: null, exitCode: 0, output: undefined, stderr: undefined });
    expect(ran).toBe(run.length);
    run.forEach((b, i) => {
      for (const file of b.cites) {
        const cited = new RegExp(`"file_name":\\s*"${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`).test(result.outputs[i]);
        expect({ line: b.line, file, cited, output: cited ? undefined : result.outputs[i].slice(-2000) }).toEqual({
          line: b.line,
          file,
          cited: true,
          output: undefined,
        });
      }
    });
  });
});
