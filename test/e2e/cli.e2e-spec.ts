// The `kb` command line (packages/cli, built by tools/build.mjs) run as a user runs it, against the
// live stack: KB_BASE_URL / KB_API_KEY, tables and progress on a non-terminal, `--json` for scripts,
// exit codes, `--help` on every command, shell completion, profiles (`kb login`).
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { api, baseUrl, corpusFile, kbctl, newOrg, ROOT } from './support/harness';
import { startReceiver } from './support/webhook-receiver';

jest.setTimeout(300_000);

const CLI = path.join(ROOT, 'packages/cli/dist/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A config folder of no profile by default: a developer's own ~/.config/kb must not change the results. */
const NO_CONFIG = mkdtempSync(path.join(os.tmpdir(), 'kb-cli-config-'));

/**
 * Runs `kb …` with the given API key (KB_API_KEY unset when null), optional stdin, and environment
 * changes (`undefined` unsets a variable).
 */
function kb(key: string | null, args: string[], input?: string, extraEnv: Record<string, string | undefined> = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, KB_BASE_URL: baseUrl(), KB_API_KEY: key ?? '', XDG_CONFIG_HOME: NO_CONFIG };
  delete env.KB_PROFILE;
  if (key === null) delete env.KB_API_KEY;
  for (const [name, value] of Object.entries(extraEnv)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
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
async function json(key: string | null, args: string[], input?: string, extraEnv: Record<string, string | undefined> = {}): Promise<any> {
  const r = await kb(key, [...args, '--json'], input, extraEnv);
  if (r.code !== 0) throw new Error(`kb ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

const COMMANDS = [
  'upload',
  'docs list',
  'docs status',
  'docs download',
  'docs delete',
  'docs chunks',
  'docs chunk',
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
  'runs rerun',
  'runs compare',
  'runs report',
  'review set',
  'review clear',
  'batch create',
  'batch list',
  'batch status',
  'batch wait',
  'batch export',
  'webhooks create',
  'webhooks list',
  'webhooks get',
  'webhooks update',
  'webhooks delete',
  'webhooks deliveries',
  'webhooks retry',
  'webhooks verify',
  'audit list',
  'login',
  'logout',
  'completion',
];
/** Commands that print no JSON (a shell script). */
const NO_JSON = new Set(['completion']);

/** A shell's path when it is installed here (zsh and fish may not be), else null. */
function shell(name: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

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
      if (!NO_JSON.has(command)) expect(r.stdout).toContain('--json');
    }
    expect(top.stdout).toMatch(/Exit codes: 0 success, 1 error, 2 usage, 3 authentication, 4 rate limit or\s+quota, 5 requirements failed/);
    expect((await kb(key, ['completion', '--help'])).stdout).toContain('kb completion bash > ~/.local/share/bash-completion/completions/kb');
  });

  it('exits 2 on a usage error, 3 without a valid key, 4 over the quota', async () => {
    for (const args of [
      ['org', '--bogus'],
      ['docs', 'list', '--limit', 'x'],
      ['frobnicate'],
      ['completion', 'tcsh'],
      ['runs', 'report', 'x', '--format', 'docx'],
    ]) {
      const r = await kb(key, args);
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toMatch(/^error: /);
    }
    const wrong = await kb('kb_not_a_real_key', ['org', '--json']);
    expect(wrong.code).toBe(3);
    expect(JSON.parse(wrong.stdout).error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    // 402: a monthly request quota of 1, spent by the first call (not retried: the next month is far).
    const capped = newOrg('E2E CLI quota');
    kbctl('org', 'quota', '--org', capped.orgId, '--requests', '1');
    expect((await kb(capped.key, ['org'])).code).toBe(0);
    const over = await kb(capped.key, ['org']);
    expect(over.code).toBe(4);
    expect(over.stderr).toMatch(/^kb: QUOTA_EXCEEDED \(402\): /);
  });

  it('prints completion scripts for bash, zsh and fish that the shells parse, with every command', async () => {
    for (const name of ['bash', 'zsh', 'fish']) {
      const r = await kb(null, ['completion', name]);
      expect([name, r.code]).toEqual([name, 0]);
      for (const command of COMMANDS) for (const word of command.split(' ')) expect(r.stdout).toContain(word);
      expect(r.stdout).toContain('awaiting_upload'); // an option's choices (docs list --status)
      const file = path.join(tmp, `kb.${name}`);
      writeFileSync(file, r.stdout);
      const binary = shell(name);
      if (binary) execFileSync(binary, ['-n', file]); // throws on a syntax error
    }
    // bash: what <Tab> offers at a few places (the engine of the other two is the same).
    const offers = (line: string[]) =>
      execFileSync(
        'bash',
        ['-c', `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kb_completion; echo "\${COMPREPLY[*]}"`, path.join(tmp, 'kb.bash'), ...line],
        {
          encoding: 'utf8',
        },
      ).trim();
    expect(offers(['kb', 'do'])).toBe('docs');
    expect(offers(['kb', '--profile', 'ci', 'runs', 'report', 'x', '--format', ''])).toBe('xlsx csv pdf');
    expect(offers(['kb', 'check', 'f.csv', '--fail-on', ''])).toBe('fail unsure');
    expect(offers(['kb', 'completion', ''])).toBe('bash zsh fish');
  });

  it('logs in to a profile (config file 0600), uses it, lets flags and the environment override it, logs out', async () => {
    const config = mkdtempSync(path.join(os.tmpdir(), 'kb-cli-xdg-'));
    const file = path.join(config, 'kb', 'config.json');
    // No KB_BASE_URL / KB_API_KEY: only the profile connects.
    const bare = { XDG_CONFIG_HOME: config, KB_BASE_URL: undefined };
    const login = await kb(null, ['login', '--base-url', baseUrl()], `${key}\n`, bare);
    expect(login).toMatchObject({ code: 0, stdout: `Logged in to E2E CLI (${org.orgId}) at ${baseUrl()}; saved as profile "default" in ${file}\n` });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ profiles: { default: { base_url: baseUrl(), api_key: key } } });
    expect(login.stdout + login.stderr).not.toContain(key);
    expect(await json(null, ['org'], undefined, bare)).toEqual({ id: org.orgId, name: 'E2E CLI' });

    // A wrong key is refused (3) and not saved; --api-key is refused on login (2): it would stay in the shell history.
    expect((await kb(null, ['login', '--profile', 'ci', '--base-url', baseUrl()], 'kb_wrong\n', bare)).code).toBe(3);
    expect((await kb(null, ['login', '--profile', 'ci', '--api-key', key], '', bare)).code).toBe(2);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).profiles)).toEqual(['default']);
    // KB_API_KEY is read by login too; KB_PROFILE selects the profile.
    expect((await kb(key, ['login', '--profile', 'ci', '--base-url', baseUrl(), '--json'], '', bare)).code).toBe(0);
    expect((await kb(null, ['org'], undefined, { ...bare, KB_PROFILE: 'ci' })).code).toBe(0);
    expect((await kb(null, ['--profile', 'nope', 'org'], undefined, bare)).code).toBe(2);

    // Precedence, field by field: flag > environment > profile.
    const profiles = JSON.parse(readFileSync(file, 'utf8')).profiles;
    profiles.moved = { base_url: 'http://127.0.0.1:9', api_key: key };
    writeFileSync(file, JSON.stringify({ profiles }));
    const unreachable = await kb(null, ['--profile', 'moved', 'org'], undefined, bare);
    expect(unreachable).toMatchObject({ code: 1, stderr: expect.stringContaining('Cannot reach http://127.0.0.1:9') });
    expect((await kb(null, ['--profile', 'moved', 'org'], undefined, { ...bare, KB_BASE_URL: baseUrl() })).code).toBe(0);
    expect((await kb(null, ['--profile', 'moved', '--base-url', baseUrl(), 'org'], undefined, bare)).code).toBe(0);
    expect((await kb('kb_wrong', ['org'], undefined, bare)).code).toBe(3); // KB_API_KEY over the default profile
    expect((await kb('kb_wrong', ['--api-key', key, 'org'], undefined, bare)).code).toBe(0);

    expect(await json(null, ['logout'], undefined, bare)).toEqual({ profile: 'default', removed: true, config_file: file });
    expect((await kb(null, ['logout'], undefined, bare)).stdout).toBe(`no profile "default" in ${file}: nothing to remove\n`);
    const loggedOut = await kb(null, ['org'], undefined, { ...bare, KB_BASE_URL: baseUrl() });
    expect(loggedOut.code).toBe(3);
    expect(loggedOut.stderr).toMatch(/kb login/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('says how to configure it when KB_API_KEY is missing, in words and in JSON', async () => {
    const plain = await kb(null, ['org']);
    expect(plain.code).toBe(3);
    expect(plain.stderr).toMatch(/KB_API_KEY/);
    const asJson = await kb(null, ['org', '--json']);
    expect(asJson.code).toBe(3);
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
    mkdirSync(dir);
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
    expect(table.stdout).toMatch(/│ empty\.txt\s+│ failed\s+│\s+│ 1\s+│ \(org\)\s+│ \d{4}-\d\d-\d\d │/);
    expect(table.stdout).toMatch(/4 of 4 document\(s\)/);
    const extra = (await json(key, ['upload', corpusFile('markdown/jupiterone_policy_access.md')])).documents[0];
    expect(extra).toMatchObject({ status: 'completed', project_id: null });
    expect(await json(key, ['docs', 'delete', extra.id])).toEqual({ deleted: [extra.id] });
    expect((await kb(key, ['docs', 'status', extra.id])).code).toBe(1);
  });

  it('uploads a new version with --replaces and lists only current versions with --current', async () => {
    const v1File = path.join(tmp, 'irp.md');
    writeFileSync(v1File, readFileSync(corpusFile('markdown/jupiterone_policy_ir.md')));
    const v1 = (await json(key, ['upload', v1File])).documents[0];
    expect(v1).toMatchObject({ status: 'completed', version: 1 });
    const v2File = path.join(tmp, 'irp-2.md');
    writeFileSync(v2File, readFileSync(v1File, 'utf8').replace('All alerts must be reviewed', 'All alerts must be reviewed within 15 minutes'));
    const upload = await kb(key, ['upload', v2File, '--replaces', v1.id]);
    expect(upload.code).toBe(0);
    expect(upload.stdout).toMatch(new RegExp(`1 file\\(s\\) \\(version 2, replaces ${v1.id}\\): 1 completed`));
    const current = await json(key, ['docs', 'list', '--current']);
    const ids = current.data.map((d: any) => d.id);
    const v2 = current.data.find((d: any) => d.file_name === 'irp-2.md');
    expect(v2).toMatchObject({ version: 2, replaces: v1.id, superseded_by: null });
    expect(ids).not.toContain(v1.id);
    const table = await kb(key, ['docs', 'list']);
    expect(table.stdout).toMatch(/│ irp\.md\s+│ completed\s+│ \d+\s+│ 1 superseded\s+│ \(org\)/);
    expect(table.stdout).toMatch(/│ irp-2\.md\s+│ completed\s+│ \d+\s+│ 2\s+│ \(org\)/);
    const again = await kb(key, ['upload', v2File, '--replaces', v1.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/CONFLICT|superseded/);
    expect((await kb(key, ['upload', v1File, v2File, '--replaces', v2.id])).code).toBe(2);
    expect(await json(key, ['docs', 'delete', v1.id, v2.id])).toEqual({ deleted: [v1.id, v2.id] });
  });

  it("lists a document's chunks (a page, --all, a table) and shows one in full", async () => {
    const pdf = (await json(key, ['docs', 'list', '--project', projectId, '--status', 'completed'])).data.find((d: any) => d.file_name === 'OSHA2001.pdf');
    expect(pdf.chunk_count).toBeGreaterThan(3);
    const page = await json(key, ['docs', 'chunks', pdf.id, '--limit', '2', '--offset', '1']);
    expect(page.pagination).toEqual({ limit: 2, offset: 1, total: pdf.chunk_count });
    expect(page.data).toHaveLength(2);
    const all = await json(key, ['docs', 'chunks', pdf.id, '--all']);
    expect(all.data).toHaveLength(pdf.chunk_count);
    expect(all.data.slice(1, 3)).toEqual(page.data);
    expect(new Set(all.data.map((c: any) => c.node_id)).size).toBe(pdf.chunk_count);
    const shown = await kb(key, ['docs', 'chunks', pdf.id, '--limit', '2']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/│ 1\s+│ [0-9a-f-]{36} │ p\.\d+/);
    expect(shown.stdout).toContain(`2 of ${pdf.chunk_count} chunk(s) (offset 0)`);
    const one = await kb(key, ['docs', 'chunk', pdf.id, page.data[0].node_id]);
    expect(one.code).toBe(0);
    expect(one.stdout.startsWith(page.data[0].node_id)).toBe(true);
    expect(one.stdout.endsWith(`\n\n${page.data[0].text}\n`)).toBe(true);
    expect(await json(key, ['docs', 'chunk', pdf.id, page.data[0].node_id])).toEqual(page.data[0]);
    const missing = await kb(key, ['docs', 'chunk', pdf.id, '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^kb: NOT_FOUND \(404\): /);
  });

  it('manages webhooks, reads the delivery log, retries, and verifies a captured delivery offline', async () => {
    const receiver = await startReceiver();
    try {
      const created = await kb(key, ['webhooks', 'create', receiver.url('/cli'), '--events', 'document.deleted', '--description', 'CLI hook']);
      expect(created.code).toBe(0);
      const secret = /secret \(shown this once; keep it to verify deliveries\): (whsec_\S+)\n/.exec(created.stdout)![1];
      const id = /│ ([0-9a-f-]{36})\s*│/.exec(created.stdout)![1];
      const refused = await kb(key, ['webhooks', 'create', receiver.url('/x'), '--events', 'document.exploded', '--json']);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, message: expect.stringContaining('document.exploded') });
      expect((await json(key, ['webhooks', 'list'])).data.map((h: any) => h.id)).toEqual([id]);
      const got = await json(key, ['webhooks', 'get', id]);
      expect(got).toMatchObject({ id, url: receiver.url('/cli'), events: ['document.deleted'], description: 'CLI hook', enabled: true });
      expect(got.secret).toBeUndefined();

      // An event: a reserved document deleted.
      const reserved = (await api(key).post('/api/v2/documents').send({ file_name: 'hook.txt', content_type: 'text/plain', size_bytes: 4 })).body.data;
      expect(await json(key, ['docs', 'delete', reserved.id])).toEqual({ deleted: [reserved.id] });
      await receiver.waitFor((all) => all.some((r) => r.path === '/cli'), 60_000, 'the CLI endpoint delivery');
      const delivery = receiver.at('/cli')[0];
      let log: any;
      do log = await json(key, ['webhooks', 'deliveries', id]);
      while (log.data[0]?.status !== 'succeeded' && (await new Promise((r) => setTimeout(r, 200)), true));
      expect(log.data[0]).toMatchObject({ event: 'document.deleted', event_id: delivery.headers['webhook-id'], attempts: 1, response_status: 200 });
      const table = await kb(key, ['webhooks', 'deliveries', id]);
      expect(table.stdout).toMatch(/document\.deleted\s+│ succeeded\s+│ 1\s+│ 200/);

      // verify: no API key needed; body file + headers file (JSON, or a raw HTTP dump), stdin + -H.
      const bodyFile = path.join(tmp, 'delivery.body');
      writeFileSync(bodyFile, delivery.body);
      const headersFile = path.join(tmp, 'delivery.headers');
      writeFileSync(headersFile, JSON.stringify(delivery.headers));
      const ok = await kb(null, ['webhooks', 'verify', bodyFile, '--headers', headersFile, '--secret', secret]);
      expect(ok).toMatchObject({
        code: 0,
        stdout: `✔ valid document.deleted (event ${delivery.event.id}, ${delivery.event.created_at}): ${reserved.id} awaiting_upload\n`,
      });
      const dump = path.join(tmp, 'delivery.http');
      writeFileSync(
        dump,
        `POST /cli HTTP/1.1\r\n${Object.entries(delivery.headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\r\n')}\r\n\r\n${delivery.body}`,
      );
      expect((await kb(null, ['webhooks', 'verify', bodyFile, '--headers', dump, '--secret', secret])).code).toBe(0);
      const piped = await kb(
        null,
        [
          'webhooks',
          'verify',
          '-',
          '--secret',
          secret,
          '--json',
          ...['webhook-id', 'webhook-timestamp', 'webhook-signature'].flatMap((h) => ['-H', `${h}:${delivery.headers[h]}`]),
        ],
        delivery.body,
      );
      expect(JSON.parse(piped.stdout)).toEqual({ valid: true, event: delivery.event });
      writeFileSync(bodyFile, delivery.body.replace('hook.txt', 'hook.exe'));
      const tampered = await kb(null, ['webhooks', 'verify', bodyFile, '--headers', headersFile, '--secret', secret]);
      expect(tampered.code).toBe(1);
      expect(tampered.stderr).toMatch(/^kb: webhook does not verify \(bad_signature\): /);
      const noSecret = await kb(null, ['webhooks', 'verify', bodyFile, '--headers', headersFile, '--json']);
      expect(JSON.parse(noSecret.stdout).error).toMatchObject({ code: 'CLIENT_ERROR', message: expect.stringContaining('KB_WEBHOOK_SECRET') });

      // Retry: sent again, the same event id.
      expect(await json(key, ['webhooks', 'retry', id, log.data[0].id])).toMatchObject({ id: log.data[0].id, status: 'pending' });
      await receiver.waitFor((all) => all.filter((r) => r.path === '/cli').length === 2, 60_000, 'the retried delivery');
      expect(receiver.at('/cli')[1].headers['webhook-id']).toBe(delivery.headers['webhook-id']);

      expect(await json(key, ['webhooks', 'update', id, '--disable', '--clear-description'])).toMatchObject({ id, enabled: false, description: null });
      const nothing = await kb(key, ['webhooks', 'update', id]);
      expect(nothing.code).toBe(2);
      expect(nothing.stderr).toMatch(/nothing to change/);
      expect(await json(key, ['webhooks', 'delete', id])).toEqual({ deleted: id });
      expect((await kb(key, ['webhooks', 'get', id])).code).toBe(1);
    } finally {
      await receiver.close();
    }
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

  it('verifies one requirement, exiting 5 with --fail-on when it is not met', async () => {
    const met = 'All alerts must be reviewed to identify security incidents.';
    const r = await kb(key, ['verify', met, '--project', projectId, '--fail-on', 'fail']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^COMPLIANT \(confidence 0\.\d\d\)\nEvidence: ".*All alerts must be reviewed.*" \(jupiterone_policy_ir\.md\)/);
    // unsure: 5 exactly when the confidence is below 0.7 (the API's threshold).
    const unsure = await kb(key, ['verify', met, '--project', projectId, '--fail-on', 'unsure', '--json']);
    expect(unsure.code).toBe(JSON.parse(unsure.stdout).confidence < 0.7 ? 5 : 0);
    const unmet = 'Backups must be encrypted with AES-256, and tested weekly.';
    const plain = await kb(key, ['verify', unmet, '--project', projectId, '--json']);
    expect(plain.code).toBe(0); // no gate without --fail-on
    expect(JSON.parse(plain.stdout).verdict).not.toBe('COMPLIANT');
    const gated = await kb(key, ['verify', unmet, '--project', projectId, '--fail-on', 'fail']);
    expect(gated.code).toBe(5);
    expect(gated.stdout).toMatch(/^(CONTRADICTS|NOT_FOUND) \(confidence/);
    expect(gated.stderr).toBe('kb: requirements failed (--fail-on fail): 1 of 1 fail\n');
  });

  it('checks a requirements file: a table of verdicts, --out CSV and JSON, and the run commands', async () => {
    const file = path.join(tmp, 'requirements.csv');
    writeFileSync(
      file,
      'ref,requirement\nIR-1,All alerts must be reviewed to identify security incidents.\nBK-1,"Backups must be encrypted with AES-256, and tested weekly."\n',
    );
    const csvOut = path.join(tmp, 'results.csv');
    const r = await kb(key, ['check', file, '--project', projectId, '--out', csvOut, '--fail-on', 'fail']);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('kb: requirements failed (--fail-on fail): 1 of 2 fail\n');
    expect(r.stderr).toMatch(/check run [0-9a-f-]{36}: 2 requirement\(s\)/);
    expect(r.stdout).toMatch(/│ 1\s+│ All alerts must be reviewed to\s.*│ ✔ PASS/s);
    expect(r.stdout).toMatch(/│ 2\s+│ Backups must be encrypted.*│ ✘ FAIL/s);
    expect(r.stdout).toMatch(/Run ([0-9a-f-]{36}) completed: 2\/2 checked, 1 pass, 1 fail; results written to /);
    const runId = /Run ([0-9a-f-]{36})/.exec(r.stdout)![1];
    const rows = parse<Record<string, string>>(readFileSync(csvOut, 'utf8'), { columns: true });
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

    // A person's review next to the machine's verdict: set (words and JSON), shown by `runs requirements`, cleared.
    const [firstReq] = (await json(key, ['runs', 'requirements', runId])).requirements;
    const set = await kb(key, [
      'review',
      'set',
      runId,
      firstReq.id,
      '--decision',
      'fail',
      '--reviewer',
      'Dana',
      '--comment',
      'Alerts are sampled, not all reviewed.',
    ]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain(`requirement ${firstReq.id} (#1) reviewed: fail by Dana`);
    expect((await kb(key, ['runs', 'requirements', runId])).stdout).toContain('fail by Dana');
    const replaced = await json(key, ['review', 'set', runId, firstReq.id, '--decision', 'pass', '--reviewer', 'Lee']);
    expect(replaced).toMatchObject({ id: firstReq.id, review: { decision: 'pass', reviewer: 'Lee', comment: null, outdated: false } });
    expect((await json(key, ['runs', 'status', runId])).review_summary.reviewed).toBe(1);
    const badDecision = await kb(key, ['review', 'set', runId, firstReq.id, '--decision', 'maybe', '--reviewer', 'Lee']);
    expect(badDecision.code).toBe(2);
    const tooLong = await kb(key, ['review', 'set', runId, firstReq.id, '--decision', 'pass', '--reviewer', 'x'.repeat(201), '--json']);
    expect(tooLong.code).toBe(1);
    expect(JSON.parse(tooLong.stdout).error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
    // The run's report (reviewed): CSV to --out parsed back (ref from metadata, the review), XLSX (the default format) with --json, a bad format refused.
    const reportDir = mkdtempSync(path.join(os.tmpdir(), 'kb-cli-report-'));
    const reportCsvOut = path.join(reportDir, 'report.csv');
    const saved = await kb(key, ['runs', 'report', runId, '--format', 'csv', '--out', reportCsvOut]);
    expect(saved.code).toBe(0);
    expect(saved.stdout).toContain(`report of run ${runId} (csv`);
    const reportRows: Record<string, string>[] = parse(readFileSync(reportCsvOut), { columns: true });
    expect(reportRows[0]).toMatchObject({ index: '0', ref: 'IR-1', review_decision: 'pass', reviewer: 'Lee' });
    const xlsxSaved = await json(key, ['runs', 'report', runId, '--out', path.join(reportDir, 'report.xlsx')]);
    expect(xlsxSaved).toMatchObject({ run_id: runId, format: 'xlsx', saved_to: path.join(reportDir, 'report.xlsx') });
    expect(readFileSync(xlsxSaved.saved_to).subarray(0, 2).toString()).toBe('PK');
    expect((await kb(key, ['runs', 'report', runId, '--format', 'docx'])).code).toBe(2);
    expect(await json(key, ['review', 'clear', runId, firstReq.id])).toEqual({ run_id: runId, requirement_id: firstReq.id, review: null });
    expect((await json(key, ['runs', 'requirements', runId])).requirements[0].review).toBeNull();

    // A CI gate on the run: 5 while a requirement fails; a person's current review overrides the machine.
    const gated = await kb(key, ['runs', 'wait', runId, '--fail-on', 'fail', '--json']);
    expect(gated.code).toBe(5);
    expect(JSON.parse(gated.stdout).id).toBe(runId);
    expect(gated.stderr).toBe('kb: requirements failed (--fail-on fail): 1 of 2 fail\n');
    const reqs = (await json(key, ['runs', 'requirements', runId])).requirements;
    for (const x of reqs) await json(key, ['review', 'set', runId, x.id, '--decision', 'pass', '--reviewer', 'CI']);
    expect(await kb(key, ['runs', 'wait', runId, '--fail-on', 'unsure'])).toMatchObject({ code: 0, stderr: '' });
    for (const x of reqs) await json(key, ['review', 'clear', runId, x.id]);

    // Rerun (JSON and words), checked, then compared with the original: <id> before, --with after.
    const rerun = await json(key, ['runs', 'rerun', runId, '--name', 'CLI rerun']);
    expect(rerun).toMatchObject({ name: 'CLI rerun', status: 'pending', source_run_id: runId, total_requirements: 2 });
    const words = await kb(key, ['runs', 'rerun', runId]);
    expect(words.code).toBe(0);
    expect(words.stdout).toMatch(/^run [0-9a-f-]{36} ".* \(rerun\)" created \(pending\) from /);
    const pendingCompare = await kb(key, ['runs', 'compare', runId, '--with', rerun.id]);
    expect(pendingCompare.code).toBe(0);
    expect(pendingCompare.stdout).toContain('pending');
    expect(pendingCompare.stdout).toContain(`2 changed, 0 unchanged, 0 only in ${runId}, 0 only in ${rerun.id}`);
    expect(await json(key, ['runs', 'trigger', rerun.id, '--skip-breakdown'])).toMatchObject({ status: 'processing' });
    expect(await json(key, ['runs', 'wait', rerun.id])).toMatchObject({ status: 'completed' });
    const compared = await json(key, ['runs', 'compare', runId, '--with', rerun.id]);
    expect(compared).toMatchObject({ run_id: runId, with_run_id: rerun.id });
    expect(compared.summary.unchanged + compared.summary.changed).toBe(2);
    const noWith = await kb(key, ['runs', 'compare', runId]);
    expect(noWith.code).not.toBe(0);
    expect(noWith.stderr).toContain('--with');
    const badWith = await kb(key, ['runs', 'compare', runId, '--with', 'nope', '--json']);
    expect(badWith.code).toBe(1);
    expect(JSON.parse(badWith.stdout).error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
  });

  it('runs a batch: create and wait with a CSV export, list, status, export', async () => {
    const questions = path.join(tmp, 'questions.txt');
    writeFileSync(questions, 'Must employers notify employees exposed to toxic materials?\nWho must review alerts?\n');
    const out = path.join(tmp, 'batch.csv');
    const done = await json(key, ['batch', 'create', questions, '--project', projectId, '--name', 'CLI batch', '--wait', '--out', out]);
    expect(done).toMatchObject({ status: 'completed', total_questions: 2, processed_questions: 2, name: 'CLI batch' });
    const rows = parse<Record<string, string>>(readFileSync(out, 'utf8'), { columns: true });
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

  it('lists the audit log: a table, filters, --json with before/after, 400 for a bad time', async () => {
    const renamed = await api(key).post('/api/v2/projects').send({ name: 'Audit CLI' });
    await api(key).patch(`/api/v2/projects/${renamed.body.data.id}`).set('X-Request-Id', 'cli-audit-rename').send({ name: 'Audit CLI 2' });
    const listed = await json(key, ['audit', 'list', '--resource-type', 'project', '--resource-id', renamed.body.data.id]);
    expect(listed.data.map((e: any) => e.action)).toEqual(['project.updated', 'project.created']);
    expect(listed.data[0]).toMatchObject({
      request_id: 'cli-audit-rename',
      actor: { api_key_name: 'E2E CLI key' },
      data: { before: { name: 'Audit CLI' }, after: { name: 'Audit CLI 2' } },
    });
    expect(listed.pagination).toEqual({ limit: 50, offset: 0, total: 2 });
    const table = await kb(key, ['audit', 'list', '--action', 'project.updated', '--limit', '1']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`project\\.updated\\s+│ ${renamed.body.data.id}\\s+│ E2E CLI key\\s+│ cli-audit-rename`));
    expect(table.stdout).toMatch(/1 of \d+ event\(s\) \(offset 0\)/);
    const bad = await kb(key, ['audit', 'list', '--since', 'yesterday', '--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, message: expect.stringContaining('since') });
  });
});
