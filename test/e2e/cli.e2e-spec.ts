// The `kb` command line (packages/cli, built by tools/build.mjs) run as a user runs it, against the
// live stack: KB_BASE_URL / KB_API_KEY, tables and progress on a non-terminal, `--json` for scripts,
// exit codes, `--help` on every command.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { baseUrl, corpusFile, newOrg, ROOT } from './support/harness';

jest.setTimeout(300_000);

const CLI = path.join(ROOT, 'packages/cli/dist/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `kb …` with the given API key (KB_API_KEY unset when null) and optional stdin. */
function kb(key: string | null, args: string[], input?: string): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, KB_BASE_URL: baseUrl(), KB_API_KEY: key ?? '' };
  if (key === null) delete env.KB_API_KEY;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** `kb … --json`, expecting exit 0; its one JSON document. */
async function json(key: string, args: string[], input?: string): Promise<any> {
  const r = await kb(key, [...args, '--json'], input);
  if (r.code !== 0) throw new Error(`kb ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

const COMMANDS = [
  'upload',
  'docs list',
  'docs status',
  'docs download',
  'docs delete',
  'projects list',
  'projects create',
  'projects show',
  'projects update',
  'projects delete',
  'org',
  'ask',
  'chat',
  'verify',
  'check',
  'runs list',
  'runs status',
  'runs requirements',
  'runs wait',
  'runs trigger',
  'runs stop',
  'batch create',
  'batch list',
  'batch status',
  'batch wait',
  'batch export',
];

describe('kb command line', () => {
  const org = newOrg('E2E CLI');
  const key = org.key;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'kb-cli-'));
  let projectId: string;

  it('has --help on every command, each naming its options and --json', async () => {
    const top = await kb(key, ['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/KB_BASE_URL/);
    const listed = [...top.stdout.matchAll(/^ {2}(\w+)/gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(new Set(listed)).toEqual(new Set(COMMANDS.map((c) => c.split(' ')[0])));
    for (const command of COMMANDS) {
      const r = await kb(key, [...command.split(' '), '--help']);
      expect([command, r.code]).toEqual([command, 0]);
      expect(r.stdout).toContain(`Usage: kb ${command}`);
      expect(r.stdout).toContain('--json');
    }
  });

  it('says how to configure it when KB_API_KEY is missing, in words and in JSON', async () => {
    const plain = await kb(null, ['org']);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/KB_API_KEY/);
    const asJson = await kb(null, ['org', '--json']);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout).error).toMatchObject({ code: 'CLIENT_ERROR', message: expect.stringMatching(/KB_API_KEY/) });
    // A service that cannot be reached (a port just freed): named, after the retries.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const down = await kb(key, ['--base-url', `http://127.0.0.1:${port}`, 'org']);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`kb: CLIENT_ERROR: Cannot reach http://127.0.0.1:${port}: ECONNREFUSED\n`);
  });

  it('manages projects and shows the organization', async () => {
    expect(await json(key, ['org'])).toEqual({ id: org.orgId, name: 'E2E CLI' });
    const created = await kb(key, ['projects', 'create', 'CLI project']);
    expect(created.code).toBe(0);
    projectId = created.stdout.trim();
    expect(projectId).toMatch(/^[0-9a-f-]{36}$/);
    const updated = await json(key, ['projects', 'update', projectId, '--description', 'policies under test']);
    expect(updated).toMatchObject({ id: projectId, name: 'CLI project', description: 'policies under test' });
    const shown = await kb(key, ['projects', 'show', projectId]);
    expect(shown.stdout).toContain('policies under test');
    const spare = (await json(key, ['projects', 'create', 'Spare'])).id;
    expect((await json(key, ['projects', 'list'])).data.map((p: any) => p.id)).toEqual([spare, projectId]);
    expect(await json(key, ['projects', 'delete', spare])).toEqual({ deleted: spare });
    const missing = await kb(key, ['projects', 'show', spare]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^kb: NOT_FOUND \(404\): .+ \[request \S+\]\n$/);
  });

  it('uploads a folder: one line per finished file, a summary table, unsupported files skipped', async () => {
    const dir = path.join(tmp, 'policies');
    require('node:fs').mkdirSync(dir);
    copyFileSync(corpusFile('markdown/jupiterone_policy_ir.md'), path.join(dir, 'jupiterone_policy_ir.md'));
    copyFileSync(corpusFile('markdown/datica_11-incident_response_policy.md'), path.join(dir, 'datica_11-incident_response_policy.md'));
    writeFileSync(path.join(dir, 'draft.xyz'), 'not a supported type');
    const r = await kb(key, ['upload', dir, corpusFile('pdf/OSHA2001.pdf'), '--project', projectId]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('✔ OSHA2001.pdf: completed');
    expect(r.stderr).toContain('✔ jupiterone_policy_ir.md: completed');
    expect(r.stdout).toMatch(/│ OSHA2001\.pdf\s+│ 810 KB\s+│ completed\s+│ \d+\s+│ [0-9a-f-]{36} │/);
    expect(r.stdout).toContain('skipped');
    expect(r.stdout).toContain('draft.xyz: unsupported file type');
    expect(r.stdout).toMatch(/3 file\(s\) into project \S+: 3 completed, 1 skipped; \d+ chunks indexed/);
  });

  it('uploads with --json and exits 1 when a file fails', async () => {
    const empty = path.join(tmp, 'empty.txt');
    writeFileSync(empty, '');
    const odd = path.join(tmp, 'notes.xyz');
    writeFileSync(odd, 'a type the service does not take');
    const r = await kb(key, ['upload', empty, odd, '--json']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.documents).toEqual([]);
    expect(out.failed).toEqual([
      { file: odd, error: expect.stringMatching(/^unsupported file type \(the service takes \.pdf .*\)$/), document_id: null },
      { file: empty, error: expect.stringMatching(/\w/), document_id: expect.stringMatching(/^[0-9a-f-]{36}$/) },
    ]);
  });

  it('lists, shows, downloads and deletes documents', async () => {
    const list = await json(key, ['docs', 'list', '--project', projectId, '--status', 'completed']);
    expect(list.pagination.total).toBe(3);
    const pdf = list.data.find((d: any) => d.file_name === 'OSHA2001.pdf');
    const status = await kb(key, ['docs', 'status', pdf.id]);
    expect(status.stdout).toMatch(/OSHA2001\.pdf\s+│ completed/);
    const out = path.join(tmp, 'copy.pdf');
    const download = await kb(key, ['docs', 'download', pdf.id, '--out', out]);
    expect(download.stdout).toBe(`OSHA2001.pdf (829059 bytes) saved to ${out}\n`);
    expect(readFileSync(out).equals(readFileSync(corpusFile('pdf/OSHA2001.pdf')))).toBe(true);
    const table = await kb(key, ['docs', 'list']);
    // The project's three and the empty file of the previous test (failed, organization-level).
    expect(table.stdout).toMatch(/│ empty\.txt\s+│ failed\s+│\s+│ \(org\)\s+│ \d{4}-\d\d-\d\d │/);
    expect(table.stdout).toMatch(/4 of 4 document\(s\)/);
    const extra = (await json(key, ['upload', corpusFile('markdown/jupiterone_policy_access.md')])).documents[0];
    expect(extra).toMatchObject({ status: 'completed', project_id: null });
    expect(await json(key, ['docs', 'delete', extra.id])).toEqual({ deleted: [extra.id] });
    expect((await kb(key, ['docs', 'status', extra.id])).code).toBe(1);
  });

  it('asks a question and prints the answer with its sources', async () => {
    const r = await kb(key, ['ask', 'Must employers notify employees exposed to toxic materials?', '--project', projectId, '--chat-type', 'project']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\[1\]/);
    expect(r.stdout).toMatch(/Sources:\n {2}\[1\] OSHA2001\.pdf p\.\d+/);
    const asJson = await json(key, ['ask', 'Who must review alerts?', '--project', projectId]);
    expect(asJson.citations[0].file_name).toBe('jupiterone_policy_ir.md');
  });

  it('chats with a streamed reply (argument or stdin), the same text as --json', async () => {
    const question = 'Must employers notify employees exposed to toxic materials?';
    const streamed = await kb(key, ['chat', question, '--project', projectId, '--chat-type', 'project']);
    expect(streamed.code).toBe(0);
    const asJson = await json(key, ['chat', question, '--project', projectId, '--chat-type', 'project']);
    expect(streamed.stdout.startsWith(`${asJson.message.content}\n`)).toBe(true);
    expect(streamed.stdout).toContain('Sources:');
    expect(asJson.citations.map((c: any) => c.file_name)).toContain('OSHA2001.pdf');
    const piped = await kb(key, ['chat', '--project', projectId, '--chat-type', 'project'], `${question}\n`);
    expect(piped.stdout).toBe(streamed.stdout);
    const refused = await kb(key, ['chat', 'Is a harness needed above 6 feet?', '--chat-type', 'safety', '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error).toMatchObject({ code: 'AGENT_NOT_ENABLED', status: 403 });
  });

  it('verifies one requirement', async () => {
    const r = await kb(key, ['verify', 'All alerts must be reviewed to identify security incidents.', '--project', projectId]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^COMPLIANT \(confidence 0\.\d\d\)\nEvidence: ".*All alerts must be reviewed.*" \(jupiterone_policy_ir\.md\)/);
  });

  it('checks a requirements file: a table of verdicts, --out CSV and JSON, and the run commands', async () => {
    const file = path.join(tmp, 'requirements.csv');
    writeFileSync(file, 'ref,requirement\nIR-1,All alerts must be reviewed to identify security incidents.\nBK-1,"Backups must be encrypted with AES-256, and tested weekly."\n');
    const csvOut = path.join(tmp, 'results.csv');
    const r = await kb(key, ['check', file, '--project', projectId, '--out', csvOut]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/check run [0-9a-f-]{36}: 2 requirement\(s\)/);
    expect(r.stdout).toMatch(/│ 1\s+│ All alerts must be reviewed to\s.*│ ✔ PASS/s);
    expect(r.stdout).toMatch(/│ 2\s+│ Backups must be encrypted.*│ ✘ FAIL/s);
    expect(r.stdout).toMatch(/Run ([0-9a-f-]{36}) completed: 2\/2 checked, 1 pass, 1 fail; results written to /);
    const runId = /Run ([0-9a-f-]{36})/.exec(r.stdout)![1];
    const rows = parse(readFileSync(csvOut, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(Object.keys(rows[0])).toEqual(['index', 'requirement', 'result', 'sub_requirement', 'status', 'score', 'justification', 'sources']);
    expect(rows.filter((x) => x.index === '0').every((x) => x.result === 'pass' && x.status === 'comply')).toBe(true);
    expect(rows.find((x) => x.index === '1')!.result).toBe('fail');
    expect(rows[0].sources).toContain('jupiterone_policy_ir.md');

    const jsonOut = path.join(tmp, 'results.json');
    const txt = path.join(tmp, 'requirements.txt');
    writeFileSync(txt, '# comment\nAll computing environments and systems must be monitored.\n\n');
    const run = await json(key, ['check', txt, '--project', projectId, '--skip-breakdown', '--out', jsonOut]);
    expect(run).toMatchObject({ status: 'completed', total_requirements: 1, name: 'requirements.txt' });
    expect(JSON.parse(readFileSync(jsonOut, 'utf8'))).toEqual(run);

    const listed = await json(key, ['runs', 'list', '--project', projectId]);
    expect(listed.data.map((x: any) => x.id)).toEqual([run.id, runId]);
    expect((await json(key, ['runs', 'status', runId])).requirements[0].metadata).toEqual({ ref: 'IR-1' });
    expect((await json(key, ['runs', 'requirements', runId])).requirements.map((x: any) => x.text)).toEqual([
      'All alerts must be reviewed to identify security incidents.',
      'Backups must be encrypted with AES-256, and tested weekly.',
    ]);
    const stop = await kb(key, ['runs', 'stop', runId, '--json']);
    expect(stop.code).toBe(1);
    expect(JSON.parse(stop.stdout).error).toMatchObject({ code: 'CONFLICT', status: 409 });
    expect(await json(key, ['runs', 'trigger', runId, '--reprocess'])).toMatchObject({ run_id: runId, status: 'processing' });
    expect(await json(key, ['runs', 'wait', runId])).toMatchObject({ status: 'completed', processed_requirements: 2 });
  });

  it('runs a batch: create and wait with a CSV export, list, status, export', async () => {
    const questions = path.join(tmp, 'questions.txt');
    writeFileSync(questions, 'Must employers notify employees exposed to toxic materials?\nWho must review alerts?\n');
    const out = path.join(tmp, 'batch.csv');
    const done = await json(key, ['batch', 'create', questions, '--project', projectId, '--name', 'CLI batch', '--wait', '--out', out]);
    expect(done).toMatchObject({ status: 'completed', total_questions: 2, processed_questions: 2, name: 'CLI batch' });
    const rows = parse(readFileSync(out, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((x) => x.question)).toEqual(['Must employers notify employees exposed to toxic materials?', 'Who must review alerts?']);
    expect(rows[0].sources).toMatch(/OSHA2001\.pdf p\.\d+-\d+/);
    expect((await json(key, ['batch', 'list'])).data.map((b: any) => b.id)).toEqual([done.id]);
    const status = await kb(key, ['batch', 'status', done.id]);
    expect(status.stdout).toMatch(/CLI batch\s+│ completed\s+│ 2\/2/);
    const exported = await kb(key, ['batch', 'export', done.id]);
    expect(exported.stdout).toBe(readFileSync(out, 'utf8'));
    const pending = (await kb(key, ['batch', 'create', '-', '--project', projectId], 'Who reviews alerts?\n')).stdout.trim();
    expect(await json(key, ['batch', 'wait', pending])).toMatchObject({ id: pending, status: 'completed' });
  });
});
