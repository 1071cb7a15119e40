#!/usr/bin/env node
// `kb`: the command line of the service for API users (operators use `kbctl`). Configured by
// flags, KB_BASE_URL / KB_API_KEY, or a profile saved by `kb login` (config.ts); `--json` on every
// command prints one JSON document on stdout; exit codes in exit-codes.ts.
import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Argument, Command, CommanderError, Option } from 'commander';
import {
  chatText,
  clearRequirementReview,
  compareCheckRuns,
  downloadReport,
  exportBatch,
  getChunk,
  iterateChunks,
  listAuditEvents,
  listChunks,
  rerunCheckRun,
  setRequirementReview,
  waitForBatch,
  waitForCheckRun,
  type Batch,
  type BatchDetail,
  type ChatRequest,
  type CheckRequirementChange,
  type CheckRun,
  KbClient,
} from '@kb-platform/sdk';
import { checkCommand } from './check';
import { COMPLETION_HELP, completionScript, SHELLS, type Shell } from './completion';
import { checkProfileName, client, configPath, DEFAULT_BASE_URL, DEFAULT_PROFILE, readConfig, writeConfig, type ConnectionOptions } from './config';
import { exitCodeOf, ExitCode, MissingCredentialsError, UsageError } from './exit-codes';
import { FAIL_ON_CHOICES, gateMessage, runGate, verdictGate, type FailOn } from './gate';
import { clip, fail, pages, printJson, printRows, progressBar, table } from './output';
import { givenFields, int, list } from './options';
import { uploadCommand } from './upload';
import { webhooksCommands } from './webhooks';

type Opts = ConnectionOptions & { json?: boolean } & Record<string, any>;

const program = new Command('kb')
  .description(
    'Command line of the knowledge-base and compliance-checking service.\n' +
      'Configuration: `kb login` saves an API key as a profile; KB_BASE_URL (default http://localhost:8080) and KB_API_KEY override it.\n' +
      'Exit codes: 0 success, 1 error, 2 usage, 3 authentication, 4 rate limit or quota, 5 requirements failed (--fail-on).',
  )
  .version('0.1.0')
  .showHelpAfterError()
  // Usage errors of the parser are thrown (a CommanderError) instead of exiting 1: exit-codes.ts maps them to 2.
  .exitOverride()
  .addOption(new Option('--base-url <url>', "service address (default: KB_BASE_URL, else the profile's)"))
  .addOption(new Option('--api-key <key>', "API key (default: KB_API_KEY, else the profile's)"))
  .addOption(new Option('--profile <name>', `profile of the config file (default: KB_PROFILE, else "${DEFAULT_PROFILE}")`));

/** Declares a leaf command: `--json` option, and an action that gets the SDK client and reports errors. */
function leaf(parent: Command, spec: string, description: string, action: (kb: KbClient, args: any[], opts: Opts) => Promise<void>): Command {
  const cmd = parent.command(spec).description(description).option('--json', 'print one JSON document on stdout (for scripts)');
  cmd.action(async (...received: unknown[]) => {
    const command = received[received.length - 1] as Command;
    const opts = command.optsWithGlobals<Opts>();
    try {
      await action(client(opts), received.slice(0, -2), opts);
    } catch (error) {
      fail(error, opts.json);
    }
  });
  return cmd;
}

/** `--fail-on fail|unsure` (gate.ts): exit 5 when the requirements are not met. */
const failOnOption = () =>
  new Option('--fail-on <what>', 'exit 5 when a requirement fails ("fail"), or also when a verdict is unsure: confidence below 0.7 ("unsure")').choices(
    FAIL_ON_CHOICES,
  );
/** Exit 5 (with a line on stderr) when a gate trips. */
function applyGate(gate: ReturnType<typeof runGate>, failOn: FailOn): void {
  if (!gate.tripped) return;
  process.stderr.write(gateMessage(gate, failOn));
  if (!process.exitCode) process.exitCode = ExitCode.REQUIREMENTS_FAILED;
}

// ── upload ──
leaf(program, 'upload <paths...>', 'upload files and folders (walked), process them and wait; a progress bar per file, then a summary', (kb, [paths], o) =>
  uploadCommand(kb, paths, { project: o.project, replaces: o.replaces, wait: o.wait, concurrency: o.concurrency, recursive: o.recursive, json: o.json }),
)
  .option('-p, --project <id>', 'project to upload into (default: organization-level documents)')
  .option('--replaces <id>', 'upload one file as the next version of this document (same project); it is superseded once the new version is ready')
  .option('--no-wait', 'return once processing has started')
  .option('--no-recursive', 'do not walk subfolders')
  .option('--concurrency <n>', 'files sent at once', '3');

// ── docs ──
const docs = program.command('docs').description('list, inspect, download and delete documents');
leaf(docs, 'list', 'list documents, newest first', async (kb, _a, o) => {
  const page = await kb.page(
    kb.api.GET('/api/v2/documents', {
      params: { query: { project_id: o.project, status: o.status, current: o.current ? true : undefined, limit: o.limit, offset: o.offset } },
    }),
  );
  if (o.json) return printJson(page);
  const t = table(['document id', 'file', 'status', 'chunks', 'version', 'project', 'created'], [38, 'flex', 11, 8, 16, 11, 12]);
  for (const d of page.data) {
    // `2`, or `1 superseded` for a version replaced by a newer one (its id: `--json`, `superseded_by`).
    const version = d.superseded_by ? `${d.version} superseded` : String(d.version);
    t.push([
      d.id,
      d.file_name,
      d.status,
      String(d.chunk_count ?? ''),
      version,
      d.project_id ? `${d.project_id.slice(0, 8)}…` : '(org)',
      d.created_at.slice(0, 10),
    ]);
  }
  process.stdout.write(`${t.toString()}\n${page.data.length} of ${page.pagination.total} document(s) (offset ${page.pagination.offset})\n`);
})
  .option('-p, --project <id>', 'only this project')
  .addOption(new Option('--status <status>', 'only this status').choices(['awaiting_upload', 'processing', 'ready', 'completed', 'failed']))
  .option('--current', 'only current versions (leave out documents superseded by a newer version)')
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'results to skip', int, 0);
leaf(
  docs,
  'status <ids...>',
  'status of documents, where processing is (a progress column while some are processed: stage, pages done/total) and the error of failed ones',
  async (kb, [ids], o) => {
    const found = [];
    for (const id of ids as string[]) found.push(await kb.data(kb.api.GET('/api/v2/documents/{id}', { params: { path: { id } } })));
    if (o.json) return printJson({ documents: found });
    // The progress column only while some document is being processed.
    const withProgress = found.some((d) => d.progress);
    const t = withProgress
      ? table(['document id', 'file', 'status', 'progress', 'chunks', 'size', 'error'], [38, 'flex', 11, 18, 8, 10, 'flex'])
      : table(['document id', 'file', 'status', 'chunks', 'size', 'error'], [38, 'flex', 11, 8, 10, 'flex']);
    for (const d of found) {
      const row = [d.id, d.file_name, d.status, String(d.chunk_count ?? ''), String(d.size_bytes ?? ''), d.error_message ?? ''];
      if (withProgress) row.splice(3, 0, progressText(d.progress));
      t.push(row);
    }
    process.stdout.write(`${t.toString()}\n`);
  },
);
leaf(docs, 'download <id>', 'download the original file (to --out, default its own name in the current folder)', async (kb, [id], o) => {
  const d = await kb.data(kb.api.GET('/api/v2/documents/{id}/download', { params: { path: { id } } }));
  const out = o.out ?? d.file_name;
  const response = await fetch(d.download_url);
  if (!response.ok || !response.body) throw new Error(`Storage refused the download: ${response.status}`);
  await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), createWriteStream(out));
  if (o.json) return printJson({ ...d, saved_to: path.resolve(out) });
  process.stdout.write(`${d.file_name} (${d.size_bytes ?? '?'} bytes) saved to ${out}\n`);
}).option('-o, --out <file>', 'where to save it');
leaf(docs, 'delete <ids...>', 'delete documents (file, metadata and every indexed chunk)', async (kb, [ids], o) => {
  const result = await kb.data(kb.api.DELETE('/api/v2/documents', { body: { document_ids: ids } }));
  if (o.json) return printJson(result);
  process.stdout.write(`deleted ${result.deleted.length} document(s)${result.deleted.length ? `: ${result.deleted.join(', ')}` : ''}\n`);
});

/** `ocr 3/12 pages`, `chunking`… for a document being processed; empty otherwise. */
function progressText(progress: { stage: string; pages_done?: number | null; pages_total?: number | null } | null | undefined): string {
  if (!progress) return '';
  if (progress.pages_total) return `${progress.stage} ${progress.pages_done ?? 0}/${progress.pages_total} pages`;
  return progress.stage;
}
const chunkTable = () => table(['#', 'node id', 'pages', 'section', 'text'], [6, 38, 9, 'flex', 'flex']);
leaf(docs, 'chunks <document-id>', "a document's chunks in document order (the passages sources and citations point at)", async (kb, [id], o) => {
  if (o.all) {
    const all = [];
    for await (const chunk of iterateChunks(kb, id)) all.push(chunk);
    if (o.json) return printJson({ data: all, pagination: { limit: all.length, offset: 0, total: all.length } });
    const t = chunkTable();
    all.forEach((c, i) => t.push([String(i + 1), c.node_id, pages(c), c.section ?? '', clip(c.text, 200)]));
    process.stdout.write(`${t.toString()}\n${all.length} chunk(s)\n`);
    return;
  }
  const page = await listChunks(kb, id, { limit: o.limit, offset: o.offset });
  if (o.json) return printJson(page);
  const t = chunkTable();
  page.data.forEach((c, i) => t.push([String(page.pagination.offset + i + 1), c.node_id, pages(c), c.section ?? '', clip(c.text, 200)]));
  process.stdout.write(`${t.toString()}\n${page.data.length} of ${page.pagination.total} chunk(s) (offset ${page.pagination.offset})\n`);
})
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'chunks to skip', int, 0)
  .option('--all', 'every chunk (fetched 200 at a time)');
leaf(
  docs,
  'chunk <document-id> <node-id>',
  "one chunk in full: the passage behind a source's node_id or a citation's chunk_id",
  async (kb, [id, nodeId], o) => {
    const c = await getChunk(kb, id, nodeId);
    if (o.json) return printJson(c);
    const where = [c.section, pages(c)].filter(Boolean).join(', ');
    process.stdout.write(`${c.node_id}${where ? ` (${where})` : ''}\n\n${c.text}\n`);
  },
);

// ── projects ──
const projects = program.command('projects').description('create, list, rename and delete projects');
const projectRow = (p: { id: string; name: string; description?: string | null; document_count: number; created_at: string }) => [
  p.id,
  p.name,
  p.description ?? '',
  String(p.document_count),
  p.created_at,
];
const projectTable = () => table(['project id', 'name', 'description', 'docs', 'created'], [38, 'flex', 'flex', 6, 26]);
leaf(projects, 'list', 'list projects, newest first', async (kb, _a, o) => {
  const page = await kb.page(kb.api.GET('/api/v2/projects', { params: { query: { limit: o.limit, offset: o.offset } } }));
  printRows(o, page, page.data, projectTable, projectRow, `${page.data.length} of ${page.pagination.total} project(s)\n`);
})
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'results to skip', int, 0);
leaf(projects, 'create <name>', 'create a project; prints its id', async (kb, [name], o) => {
  const p = await kb.data(kb.api.POST('/api/v2/projects', { body: { name, ...(o.description !== undefined ? { description: o.description } : {}) } }));
  if (o.json) return printJson(p);
  process.stdout.write(`${p.id}\n`);
}).option('-d, --description <text>', 'description (max 500 characters)');
leaf(projects, 'show <id>', 'one project', async (kb, [id], o) => {
  const p = await kb.data(kb.api.GET('/api/v2/projects/{id}', { params: { path: { id } } }));
  printRows(o, p, [p], projectTable, projectRow);
});
leaf(projects, 'update <id>', 'rename a project or change its description', async (kb, [id], o) => {
  const body: { name?: string; description?: string | null } = {};
  if (o.name !== undefined) body.name = o.name;
  if (o.description !== undefined) body.description = o.description;
  if (o.clearDescription) body.description = null;
  const p = await kb.data(kb.api.PATCH('/api/v2/projects/{id}', { params: { path: { id } }, body }));
  printRows(o, p, [p], projectTable, projectRow);
})
  .option('-n, --name <name>', 'new name')
  .option('-d, --description <text>', 'new description')
  .option('--clear-description', 'remove the description');
leaf(projects, 'delete <id>', 'delete an empty project', async (kb, [id], o) => {
  await kb.data(kb.api.DELETE('/api/v2/projects/{id}', { params: { path: { id } } }));
  if (o.json) return printJson({ deleted: id });
  process.stdout.write(`deleted project ${id}\n`);
});

// ── org ──
leaf(program, 'org', 'the organization of the API key', async (kb, _a, o) => {
  const org = await kb.data(kb.api.GET('/api/v2/organization'));
  if (o.json) return printJson(org);
  process.stdout.write(`${org.name} (${org.id})\n`);
});

// ── ask / chat ──
const scope = (cmd: Command) =>
  cmd
    .option('-p, --project <id>', 'project whose documents (and the organization-level ones) are searched')
    .addOption(new Option('--chat-type <type>', 'agent (default: routed from the question)').choices(['general', 'project', 'safety']))
    .option('--document <ids>', 'only these documents (comma-separated, repeatable)', list);
function printSources(citations: Array<{ index: number; file_name: string; start_page: number | null; end_page: number | null; quote: string }>) {
  if (!citations.length) return;
  process.stdout.write('\nSources:\n');
  for (const c of citations) process.stdout.write(`  [${c.index}] ${[c.file_name, pages(c)].filter(Boolean).join(' ')}: "${clip(c.quote, 160)}"\n`);
}
scope(
  leaf(program, 'ask <question>', 'ask one question; prints the answer with its sources', async (kb, [question], o) => {
    const answer = await kb.data(
      kb.api.POST('/api/v2/agent/query', {
        body: {
          question,
          ...givenFields({ project_id: o.project, chat_type: o.chatType, document_ids: o.document, top_k: o.topK }),
        },
      }),
    );
    if (o.json) return printJson(answer);
    process.stdout.write(`${answer.answer}\n`);
    printSources(answer.citations);
    const confidence = (answer as { confidence?: number }).confidence;
    process.stdout.write(`\n(${answer.agent} agent, ${answer.model}${typeof confidence === 'number' ? `, confidence ${confidence.toFixed(2)}` : ''})\n`);
  }),
).option('--top-k <n>', 'passages retrieved (1-20)', int);
scope(
  leaf(program, 'chat [message]', 'chat with streamed answers: one turn with a message, else an interactive conversation (stdin)', async (kb, [message], o) => {
    const base = givenFields({ project_id: o.project, chat_type: o.chatType, document_ids: o.document });
    const messages: ChatRequest['messages'] = [];
    const turn = async (content: string) => {
      messages.push({ role: 'user', content });
      const reply = await chatText(kb, { ...base, messages }, o.json ? undefined : (text) => process.stdout.write(text));
      messages.push({ role: 'assistant', content: reply.message.content });
      if (o.json) printJson(reply);
      else {
        process.stdout.write('\n');
        printSources(reply.citations);
      }
    };
    if (message !== undefined) return turn(message);
    if (!process.stdin.isTTY) {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (!text) throw new Error('No message: give one as an argument or on stdin.');
      return turn(text);
    }
    const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
    process.stdout.write('Chat (an empty line or Ctrl-D ends it).\n');
    try {
      for (;;) {
        const line = (await rl.question('\nyou> ').catch(() => '')).trim();
        if (!line) break;
        process.stdout.write('kb> ');
        await turn(line);
      }
    } finally {
      rl.close();
    }
  }),
);

// ── verify / check / runs ──
leaf(program, 'verify <requirement>', 'check one requirement against a project (synchronous verdict with evidence)', async (kb, [requirement], o) => {
  const v = await kb.data(kb.api.POST('/api/v2/check/verify', { body: { project_id: o.project, requirement, ...givenFields({ handbook_ids: o.handbook }) } }));
  if (o.failOn) applyGate(verdictGate(v, o.failOn), o.failOn);
  if (o.json) return printJson(v);
  process.stdout.write(`${v.verdict} (confidence ${v.confidence.toFixed(2)})\n`);
  if (v.evidence)
    process.stdout.write(`Evidence: "${v.evidence}"${v.sources[0] ? ` (${[v.sources[0].title, pages(v.sources[0])].filter(Boolean).join(' ')})` : ''}\n`);
  process.stdout.write(`${v.explanation}\n`);
  if (v.recommendation) process.stdout.write(`Recommendation: ${v.recommendation}\n`);
})
  .requiredOption('-p, --project <id>', 'project to check against')
  .option('--handbook <ids>', 'only these documents (comma-separated, repeatable)', list)
  .addOption(failOnOption());
leaf(
  program,
  'check <requirements>',
  'run a check of a requirements file (.csv or one per line) with a progress bar and a table of verdicts',
  (kb, [file], o) =>
    checkCommand(kb, file, {
      project: o.project,
      name: o.name,
      out: o.out,
      skipBreakdown: o.skipBreakdown,
      handbook: o.handbook,
      json: o.json,
      failOn: o.failOn,
    }),
)
  .requiredOption('-p, --project <id>', 'project to check against')
  .option('-n, --name <name>', 'run name (default: the file name)')
  .option('-o, --out <file>', 'also write the results: .csv (one row per sub-requirement) or .json (the run)')
  .option('--skip-breakdown', 'one sub-requirement per requirement (faster)')
  .option('--handbook <ids>', 'only these documents (comma-separated, repeatable)', list)
  .addOption(failOnOption());
const runs = program.command('runs').description('check runs: list, status, requirements, wait, stop, trigger again, rerun, compare, report');
const runTable = () => table(['run id', 'name', 'status', 'checked', 'pass', 'fail', 'created'], [38, 'flex', 11, 9, 6, 6, 26]);
type RunRow = Pick<CheckRun, 'id' | 'name' | 'status' | 'processed_requirements' | 'total_requirements' | 'passed_requirements' | 'failed_requirements'> & {
  created_at?: string;
};
const runRow = (r: RunRow) => [
  r.id,
  r.name,
  r.status,
  `${r.processed_requirements}/${r.total_requirements}`,
  String(r.passed_requirements),
  String(r.failed_requirements),
  r.created_at ?? '',
];
leaf(runs, 'list', 'list check runs, newest first', async (kb, _a, o) => {
  const page = await kb.page(kb.api.GET('/api/v2/check/runs', { params: { query: { project_id: o.project, limit: o.limit, offset: o.offset } } }));
  printRows(o, page, page.data, runTable, runRow, `${(page.data as unknown[]).length} of ${page.pagination?.total ?? '?'} run(s)\n`);
})
  .option('-p, --project <id>', 'only this project')
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'results to skip', int, 0);
leaf(runs, 'status <id>', 'a run and its counters', async (kb, [id], o) => {
  const r = await kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id } } }));
  printRows(o, r, [r], runTable, runRow);
});
leaf(runs, 'requirements <id>', 'the requirements of a run with their sub-requirements', async (kb, [id], o) => {
  const reqs = await kb.data(kb.api.GET('/api/v2/check/runs/{id}/requirements', { params: { path: { id } } }));
  if (o.json) return printJson({ requirements: reqs });
  const t = table(['#', 'requirement', 'status', 'sub-requirements', 'review'], [4, 'flex', 11, 'flex', 24]);
  for (const r of reqs)
    t.push([
      String(r.order_index + 1),
      r.text,
      r.status,
      r.sub_requirements.map((s) => `${s.status} (${s.score.toFixed(2)}): ${clip(s.text, 80)}`).join('\n'),
      r.review ? `${r.review.decision} by ${r.review.reviewer}${r.review.outdated ? ' (outdated)' : ''}` : '',
    ]);
  process.stdout.write(`${t.toString()}\n`);
});
leaf(
  runs,
  'wait <id>',
  "wait until a run ends (progress bar); with --fail-on, a CI gate on its requirements (a person's current review overrides the machine)",
  async (kb, [id], o) => {
    const bar = progressBar('checking |{bar}| {value}/{total} requirements', !o.json);
    const r = await waitForCheckRun(kb, id, { onProgress: (run) => bar.update(run.processed_requirements, run.total_requirements) }).finally(() => bar.stop());
    if (o.failOn) {
      // A run that did not complete cannot be judged: an error (1), not a verdict on the requirements.
      if (r.status !== 'completed') process.exitCode = ExitCode.ERROR;
      else applyGate(runGate(r, o.failOn), o.failOn);
    }
    printRows(o, r, [r], runTable, runRow);
  },
).addOption(failOnOption());
leaf(runs, 'trigger <id>', 'start (or restart) checking a run', async (kb, [id], o) => {
  const r = await kb.data(
    kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id } }, body: { reprocess: !!o.reprocess, skip_breakdown: !!o.skipBreakdown } }),
  );
  if (o.json) return printJson(r);
  process.stdout.write(`run ${r.run_id} ${r.status} (task ${r.task_id})\n`);
})
  .option('--reprocess', 'check every requirement again')
  .option('--skip-breakdown', 'one sub-requirement per requirement');
leaf(runs, 'stop <id>', 'stop a run being processed', async (kb, [id], o) => {
  const r = await kb.data(kb.api.POST('/api/v2/check/runs/{id}/stop', { params: { path: { id } } }));
  if (o.json) return printJson(r);
  process.stdout.write(`run ${id} ${r.status}\n`);
});
leaf(
  runs,
  'report <id>',
  'download the report of a run (xlsx, csv or pdf): summary, then each requirement with result, score, review, evidence, sources',
  async (kb, [id], o) => {
    const bytes = await downloadReport(kb, id, o.format);
    const out = o.out ?? `run-${id}.${o.format}`;
    await writeFile(out, bytes);
    if (o.json) return printJson({ run_id: id, format: o.format, bytes: bytes.length, saved_to: path.resolve(out) });
    process.stdout.write(`report of run ${id} (${o.format}, ${bytes.length} bytes) saved to ${out}\n`);
  },
)
  .addOption(new Option('-f, --format <format>', 'file format').choices(['xlsx', 'csv', 'pdf']).default('xlsx'))
  .option('-o, --out <file>', 'where to save it (default run-<id>.<format> in the current folder)');

leaf(
  runs,
  'rerun <id>',
  'a new pending run with the same requirements and handbooks (trigger it to check against the documents as they are now)',
  async (kb, [id], o) => {
    const r = await rerunCheckRun(kb, id, o.name !== undefined ? { name: o.name } : {});
    if (o.json) return printJson(r);
    process.stdout.write(`run ${r.id} "${r.name}" created (${r.status}) from ${id}; start it with: kb runs trigger ${r.id}\n`);
  },
).option('-n, --name <name>', 'name of the new run (default: the original\'s name + " (rerun)")');
/** `pass 0.91 plan.md p.3` for one side of a comparison, `—` when the requirement is not in that run. */
const outcomeCell = (o: CheckRequirementChange['before']) =>
  o
    ? [o.result, o.score === null ? '' : o.score.toFixed(2), o.sources[0] ? [o.sources[0].title, pages(o.sources[0])].filter(Boolean).join(' ') : '']
        .filter(Boolean)
        .join(' ')
    : '—';
leaf(runs, 'compare <id>', 'what changed between two runs: <id> is before, --with is after (result, score band, first source)', async (kb, [id], o) => {
  const c = await compareCheckRuns(kb, id, o.with);
  if (o.json) return printJson(c);
  const t = table(['#', 'requirement', 'before', 'after'], [5, 'flex', 30, 30]);
  for (const x of c.changes) t.push([String(x.order_index + 1), x.text, outcomeCell(x.before), outcomeCell(x.after)]);
  if (c.changes.length) process.stdout.write(`${t.toString()}\n`);
  const s = c.summary;
  process.stdout.write(`${s.changed} changed, ${s.unchanged} unchanged, ${s.only_in_run} only in ${id}, ${s.only_in_with} only in ${o.with}\n`);
}).requiredOption('-w, --with <run_id>', 'the run to compare with (its results are "after")');

// ── review ──
const review = program.command('review').description("a person's pass/fail decision on a completed requirement of a check run, next to the machine's");
leaf(review, 'set <run_id> <requirement_id>', 'record (or replace) the review of a completed requirement', async (kb, [runId, requirementId], o) => {
  const r = await setRequirementReview(kb, runId, requirementId, {
    decision: o.decision,
    reviewer: o.reviewer,
    ...(o.comment !== undefined ? { comment: o.comment } : {}),
  });
  if (o.json) return printJson(r);
  process.stdout.write(`requirement ${r.id} (#${r.order_index + 1}) reviewed: ${r.review?.decision} by ${r.review?.reviewer}\n`);
})
  .addOption(new Option('-d, --decision <decision>', 'the decision').choices(['pass', 'fail']).makeOptionMandatory())
  .requiredOption('-r, --reviewer <name>', 'who decides (1 to 200 characters)')
  .option('-c, --comment <text>', 'why (at most 2,000 characters)');
leaf(
  review,
  'clear <run_id> <requirement_id>',
  'remove the review of a completed requirement (fine when it has none)',
  async (kb, [runId, requirementId], o) => {
    await clearRequirementReview(kb, runId, requirementId);
    if (o.json) return printJson({ run_id: runId, requirement_id: requirementId, review: null });
    process.stdout.write(`requirement ${requirementId}: review removed\n`);
  },
);

// ── batch ──
const batch = program.command('batch').description('batches of questions answered in the background: create, list, status, wait, export');
const batchTable = () => table(['batch id', 'name', 'status', 'answered', 'failed', 'created'], [38, 'flex', 11, 10, 8, 26]);
type BatchRow = Pick<Batch, 'id' | 'name' | 'status' | 'processed_questions' | 'total_questions' | 'failed_questions' | 'created_at'>;
const batchRow = (b: BatchRow) => [b.id, b.name ?? '', b.status, `${b.processed_questions}/${b.total_questions}`, String(b.failed_questions), b.created_at];
async function waitWithBar(kb: KbClient, id: string, json?: boolean): Promise<BatchDetail> {
  const bar = progressBar('answering |{bar}| {value}/{total} questions', !json);
  return waitForBatch(kb, id, { onProgress: (b) => bar.update(b.processed_questions, b.total_questions) }).finally(() => bar.stop());
}
async function writeCsv(kb: KbClient, id: string, out: string | undefined): Promise<void> {
  const csv = await exportBatch(kb, id);
  if (out) await import('node:fs/promises').then((fs) => fs.writeFile(out, csv));
  else process.stdout.write(csv);
}
leaf(batch, 'create <questions>', 'create a batch from a file of questions (one per line; "-" reads stdin)', async (kb, [file], o) => {
  const text =
    file === '-'
      ? await new Promise<string>((resolve) => {
          const c: Buffer[] = [];
          process.stdin.on('data', (d) => c.push(d)).on('end', () => resolve(Buffer.concat(c).toString('utf8')));
        })
      : await readFile(file, 'utf8');
  const questions = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  if (!questions.length) throw new Error(`${file} holds no question (one per line).`);
  const created = await kb.data(
    kb.api.POST('/api/v2/agent/batches', {
      body: {
        questions,
        ...givenFields({ name: o.name, project_id: o.project, chat_type: o.chatType }),
      },
    }),
  );
  if (!o.wait) {
    if (o.json) return printJson(created);
    process.stdout.write(`${created.id}\n`);
    return;
  }
  const done = await waitWithBar(kb, created.id, o.json);
  if (o.out) await writeCsv(kb, created.id, o.out);
  printRows(o, done, [done], batchTable, batchRow, o.out ? `results written to ${o.out}\n` : '');
})
  .option('-n, --name <name>', 'batch name')
  .option('-p, --project <id>', 'project whose documents answer')
  .addOption(new Option('--chat-type <type>', 'agent (default: routed per question)').choices(['general', 'project', 'safety']))
  .option('--wait', 'wait until every question is answered')
  .option('-o, --out <file>', 'with --wait: write the CSV export there');
leaf(batch, 'list', 'list batches, newest first', async (kb, _a, o) => {
  const page = await kb.page(
    kb.api.GET('/api/v2/agent/batches', { params: { query: { project_id: o.project, status: o.status, limit: o.limit, offset: o.offset } } }),
  );
  printRows(o, page, page.data, batchTable, batchRow, `${(page.data as unknown[]).length} of ${page.pagination?.total ?? '?'} batch(es)\n`);
})
  .option('-p, --project <id>', 'only this project')
  .addOption(new Option('--status <status>', 'only this status').choices(['pending', 'processing', 'completed', 'failed']))
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'results to skip', int, 0);
leaf(batch, 'status <id>', 'a batch with its answers', async (kb, [id], o) => {
  const b = await kb.data(kb.api.GET('/api/v2/agent/batches/{id}', { params: { path: { id } } }));
  if (o.json) return printJson(b);
  printRows(o, b, [b], batchTable, batchRow);
  const r = table(['#', 'question', 'status', 'answer'], [4, 'flex', 11, 'flex']);
  for (const x of b.results) r.push([String(x.index + 1), x.question, x.status, clip(x.answer ?? x.error ?? '', 300)]);
  process.stdout.write(`${r.toString()}\n`);
});
leaf(batch, 'wait <id>', 'wait until a batch is answered (progress bar)', async (kb, [id], o) => {
  const done = await waitWithBar(kb, id, o.json);
  printRows(o, done, [done], batchTable, batchRow);
});
leaf(batch, 'export <id>', 'the results as CSV (stdout, or --out)', async (kb, [id], o) => {
  if (o.wait) await waitWithBar(kb, id, o.json);
  if (o.json) return printJson({ id, csv: await exportBatch(kb, id) });
  await writeCsv(kb, id, o.out);
  if (o.out) process.stderr.write(`written to ${o.out}\n`);
})
  .option('-o, --out <file>', 'file to write')
  .option('--wait', 'wait for the batch to finish first');

webhooksCommands(program, leaf, fail);

// ── audit ──
const audit = program.command('audit').description("the organization's audit log: who changed what, when");
leaf(audit, 'list', 'list audit events, newest first (action, resource, API key, request id; --json for before/after data)', async (kb, _a, o) => {
  const page = await listAuditEvents(kb, {
    resourceType: o.resourceType,
    resourceId: o.resourceId,
    action: o.action,
    since: o.since,
    until: o.until,
    limit: o.limit,
    offset: o.offset,
  });
  if (o.json) return printJson(page);
  // The action names the resource type (`project.updated`); the time to the second, in UTC.
  const t = table(['time (UTC)', 'action', 'resource id', 'by', 'request id'], [21, 'flex', 38, 'flex', 'flex']);
  for (const e of page.data) {
    const who = e.actor.api_key_name ?? e.actor.api_key_id ?? e.actor.operator ?? '';
    t.push([
      e.created_at.slice(0, 19).replace('T', ' '),
      e.action + (e.actor.reviewer ? ` (reviewer ${e.actor.reviewer})` : ''),
      e.resource_id,
      who,
      e.request_id ?? '',
    ]);
  }
  process.stdout.write(`${t.toString()}\n${page.data.length} of ${page.pagination.total} event(s) (offset ${page.pagination.offset})\n`);
})
  .option('--resource-type <type>', 'only this resource type (project, document, check_run, requirement, batch, webhook_endpoint, …)')
  .option('--resource-id <id>', 'only this resource')
  .option('--action <action>', 'only this action, e.g. requirement.reviewed')
  .option('--since <time>', 'only events at or after this RFC 3339 time, e.g. 2026-01-31T09:00:00Z')
  .option('--until <time>', 'only events before this RFC 3339 time')
  .option('--limit <n>', 'page size (max 200)', int, 50)
  .option('--offset <n>', 'results to skip', int, 0);

// ── login / logout / completion ──
/**
 * The API key for `kb login`: KB_API_KEY when set, else stdin: a hidden prompt on a terminal, the
 * first non-empty line otherwise (`pass show kb | kb login`). Never a command-line argument (it
 * would stay in the shell's history).
 */
async function readApiKey(): Promise<string> {
  if (process.env.KB_API_KEY) return process.env.KB_API_KEY.trim();
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(c as Buffer);
    return (
      Buffer.concat(chunks)
        .toString('utf8')
        .split(/\r?\n/)
        .find((l) => l.trim()) ?? ''
    ).trim();
  }
  process.stderr.write('API key (kb_…, not shown): ');
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const done = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return (done(), resolve(value.trim()));
        if (ch === '\u0003' || ch === '\u0004') return (done(), reject(new Error('cancelled')));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
/** The profile `kb login`/`kb logout` act on: `--profile`, else KB_PROFILE, else "default". */
const profileName = (o: Opts) => checkProfileName(o.profile ?? (process.env.KB_PROFILE || DEFAULT_PROFILE));

program
  .command('login')
  .description(
    'check an API key with the service and save it, with the address, as a profile of the config file (' +
      'the key: KB_API_KEY, else stdin: a hidden prompt on a terminal, or piped)',
  )
  .option('--json', 'print one JSON document on stdout (for scripts)')
  .addHelpText(
    'after',
    `\nConfig file: ${configPath()} (mode 0600; $XDG_CONFIG_HOME/kb/config.json, default ~/.config/kb/config.json).\nExamples:\n  kb login --base-url https://kb.example.com\n  pass show kb-ci | kb login --profile ci --base-url https://kb.example.com`,
  )
  .action(async (_o: unknown, command: Command) => {
    const o = command.optsWithGlobals<Opts>();
    try {
      if (o.apiKey)
        throw new UsageError(
          'kb login takes no --api-key (it would stay in the shell history): type the key at the prompt, pipe it on stdin, or set KB_API_KEY.',
        );
      const name = profileName(o);
      const file = configPath();
      const config = readConfig(file);
      const previous = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
      const baseUrl = (o.baseUrl ?? (process.env.KB_BASE_URL || previous?.base_url || DEFAULT_BASE_URL)).replace(/\/+$/, '');
      const apiKey = await readApiKey();
      if (!apiKey) throw new MissingCredentialsError('No API key given: type it at the prompt, pipe it on stdin, or set KB_API_KEY.');
      const kb = new KbClient({ baseUrl, apiKey });
      const org = await kb.data(kb.api.GET('/api/v2/organization'));
      config.profiles[name] = { base_url: baseUrl, api_key: apiKey };
      writeConfig(config, file);
      if (o.json) return printJson({ profile: name, base_url: baseUrl, organization: org, config_file: file });
      process.stdout.write(`Logged in to ${org.name} (${org.id}) at ${baseUrl}; saved as profile "${name}" in ${file}\n`);
    } catch (error) {
      fail(error, o.json);
    }
  });
program
  .command('logout')
  .description('remove a profile (its address and API key) from the config file; nothing to remove is not an error')
  .option('--json', 'print one JSON document on stdout (for scripts)')
  .action(async (_o: unknown, command: Command) => {
    const o = command.optsWithGlobals<Opts>();
    try {
      const name = profileName(o);
      const file = configPath();
      const config = readConfig(file);
      const existed = Object.hasOwn(config.profiles, name);
      if (existed) {
        delete config.profiles[name];
        writeConfig(config, file);
      }
      if (o.json) return printJson({ profile: name, removed: existed, config_file: file });
      process.stdout.write(existed ? `removed profile "${name}" from ${file}\n` : `no profile "${name}" in ${file}: nothing to remove\n`);
    } catch (error) {
      fail(error, o.json);
    }
  });
program
  .command('completion')
  .description('print the shell completion script of kb (bash, zsh or fish) on stdout')
  .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
  .addHelpText('after', COMPLETION_HELP)
  .action((shell: Shell) => {
    process.stdout.write(completionScript(program, shell));
  });

program.parseAsync(process.argv).catch((error) => {
  // The parser already printed its message (and help for a usage error): only the exit code is left.
  if (error instanceof CommanderError) process.exitCode = exitCodeOf(error);
  else fail(error, process.argv.includes('--json'));
});
