#!/usr/bin/env node
// `npm run bench:chat`: streamed chat on a 200+ page project. Starts the whole stack on a fresh
// data folder, uploads the 193-page Debian Policy PDF into a project, then for each question
// measures over streamed chat (SSE, parsed with eventsource-parser): time to the first SSE event
// (`meta`), to the first `delta`, and to `done` (full answer); and, as the baseline in the same
// run, the same question over POST /api/v2/agent/query (JSON). Reports p50/p95 and the ratio
// streamed-full / JSON (streaming overhead) and first-event / full (how early a user sees output).
// Usage: npm run bench:chat [-- --file <pdf> --rounds N]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { ensureSystemPackages, step } from '../lib/bootstrap.mjs';
import { pdfPages, percentile } from '../lib/measure.mjs';
import { startStack } from '../lib/stack.mjs';
import { newTenant, processDocuments, uploadDocument } from '../lib/api-client.mjs';
import { DEBIAN_POLICY_PDF, DEBIAN_POLICY_QUESTIONS } from '../lib/debian-policy.mjs';

const { values } = parseArgs({ options: { file: { type: 'string' }, rounds: { type: 'string', default: '3' } } });
const file = path.resolve(values.file ?? DEBIAN_POLICY_PDF);
const QUESTIONS = DEBIAN_POLICY_QUESTIONS;
const pct = (xs, p) => Math.round(percentile(xs, p) * 10) / 10;

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-chat-'));
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ dataDir, natsServer, quiet: true });
try {
  const { key, call } = newTenant(stack, 'Bench chat', 100000);
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const pages = pdfPages(file);
  step(`ingesting ${path.basename(file)} (${pages} pages) into a project`);
  const project = await call('POST', '/api/v2/projects', { name: 'Bench project' });
  const id = await uploadDocument(call, { fileName: path.basename(file), contentType: 'application/pdf', bytes: readFileSync(file), projectId: project.id });
  const [doc] = await processDocuments(call, [id], 500);

  const stream = async (question) => {
    const t0 = performance.now();
    const res = await fetch(`${stack.baseUrl}/api/v2/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ chat_type: 'project', project_id: project.id, stream: true, messages: [{ role: 'user', content: question }] }),
    });
    if (res.status !== 200) throw new Error(`chat: ${res.status} ${await res.text()}`);
    const t = {};
    const parser = createParser({
      onEvent: (e) => {
        const now = performance.now() - t0;
        if (t.first === undefined) t.first = now;
        if (e.event === 'delta' && t.delta === undefined) t.delta = now;
        if (e.event === 'done') t.done = now;
        if (e.event === 'error') throw new Error(e.data);
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
    if (t.done === undefined) throw new Error('stream ended without done');
    return t;
  };
  const json = async (question) => {
    const t0 = performance.now();
    await call('POST', '/api/v2/agent/query', { question, chat_type: 'project', project_id: project.id });
    return performance.now() - t0;
  };

  step('warm-up');
  for (const q of QUESTIONS.slice(0, 2)) {
    await stream(q);
    await json(q);
  }
  step(`measuring ${QUESTIONS.length} questions x ${values.rounds} rounds`);
  const first = [];
  const delta = [];
  const done = [];
  const base = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const q of QUESTIONS) {
      const t = await stream(q);
      first.push(t.first);
      delta.push(t.delta);
      done.push(t.done);
      base.push(await json(q));
    }
  }
  const report = {
    file: path.basename(file),
    pages,
    chunks: doc.chunk_count,
    samples: done.length,
    model: (await call('POST', '/api/v2/agent/query', { question: QUESTIONS[0], project_id: project.id })).model,
    sse_first_event_ms: { p50: pct(first, 50), p95: pct(first, 95) },
    sse_first_delta_ms: { p50: pct(delta, 50), p95: pct(delta, 95) },
    sse_full_answer_ms: { p50: pct(done, 50), p95: pct(done, 95) },
    baseline_json_query_ms: { p50: pct(base, 50), p95: pct(base, 95) },
    ratio_sse_full_to_json_p50: Math.round((pct(done, 50) / pct(base, 50)) * 100) / 100,
    ratio_first_event_to_full_p50: Math.round((pct(first, 50) / pct(done, 50)) * 100) / 100,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
