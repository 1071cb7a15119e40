#!/usr/bin/env node
// `npm run eval:answers`: answer quality of the agent on a labelled question set written over
// documents of ../shared/corpus (tools/eval/answers-questions.json). Starts the whole stack on a
// fresh data folder and free ports, uploads the documents through the API, asks every question
// with POST /api/v2/agent/query and reports:
//   - gold cited: share of answerable questions where a citation's quote contains the gold phrase;
//   - gold document first: share where the first citation is from the gold document;
//   - abstained: share of unanswerable questions answered with no citations;
//   - quotes verbatim: share of all citations whose quote is an exact substring of the chunk it
//     names (chunk text read back from the retrieval service); must be 100 %.
// With LLM_BASE_URL (+ LLM_MODEL, LLM_API_KEY) set, the model-configured path is evaluated.
// Usage: npm run eval:answers [-- --questions FILE --top-k N --json]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { startStack } from '../lib/stack.mjs';
import { newTenant } from '../lib/api-client.mjs';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: path.join(ROOT, 'tools/eval/answers-questions.json') },
    'top-k': { type: 'string', default: '8' },
    json: { type: 'boolean' },
  },
});
const CORPUS = path.resolve(ROOT, '../shared/corpus');
const TYPES = { '.md': 'text/markdown', '.html': 'text/html', '.txt': 'text/plain', '.pdf': 'application/pdf' };
const norm = (s) => s.replace(/\s+/g, ' ').trim().toLowerCase();
const set = JSON.parse(readFileSync(values.questions, 'utf8'));

build();
const require = createRequire(import.meta.url);
const { createAsyncClient } = require(path.join(ROOT, 'dist/libs/common/src/index.js'));
const { retrievalV1 } = require(path.join(ROOT, 'dist/libs/proto/src/index.js'));

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-'));
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ dataDir, natsServer, quiet: true });
let exitCode = 0;
try {
  const { org, call } = newTenant(stack, 'Eval', 100000);

  step(`uploading ${set.documents.length} documents`);
  const docIds = {};
  for (const rel of set.documents) {
    const bytes = readFileSync(path.join(CORPUS, rel));
    const slot = await call('POST', '/api/v2/documents', { file_name: path.basename(rel), content_type: TYPES[path.extname(rel)], size_bytes: bytes.length });
    await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': slot.upload.recommended_content_type }, body: bytes });
    docIds[rel] = slot.id;
  }
  await call('POST', '/api/v2/documents/process', { document_ids: Object.values(docIds) });
  for (const id of Object.values(docIds)) {
    for (;;) {
      const d = await call('GET', `/api/v2/documents/${id}`);
      if (d.status === 'completed') break;
      if (d.status === 'failed') throw new Error(`${d.file_name} failed: ${d.error_message}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, `127.0.0.1:${stack.ports.retrieval}`);
  const chunkCache = new Map();
  /** Text of a cited chunk, read back from the index (a search for the quote within its document). */
  const chunkText = async (c) => {
    if (chunkCache.has(c.chunk_id)) return chunkCache.get(c.chunk_id);
    const res = await retrieval.search({ query: c.quote, documentIds: [c.document_id], topK: 50, corpus: 0 }, { orgId: org.id });
    for (const h of res.hits) chunkCache.set(h.chunk.id, h.chunk.text);
    return chunkCache.get(c.chunk_id) ?? null;
  };

  step(`asking ${set.questions.length} questions`);
  const rows = [];
  let model = '';
  for (const q of set.questions) {
    const t0 = performance.now();
    const a = await call('POST', '/api/v2/agent/query', { question: q.question, top_k: Number(values['top-k']) });
    const ms = performance.now() - t0;
    model = a.model;
    const quotes = [];
    for (const c of a.citations) {
      const text = await chunkText(c);
      quotes.push({ index: c.index, file: c.file_name, verbatim: text !== null && text.includes(c.quote), quote: c.quote });
    }
    const markers = [...new Set([...a.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((x, y) => x - y);
    const markersMatch = JSON.stringify(markers) === JSON.stringify(a.citations.map((c) => c.index));
    rows.push({
      question: q.question,
      answerable: q.gold !== null,
      goldCited: q.gold !== null && a.citations.some((c) => norm(c.quote).includes(norm(q.gold))),
      goldDocFirst: q.gold !== null && a.citations[0]?.file_name === path.basename(q.file),
      abstained: a.citations.length === 0,
      markersMatch,
      quotes,
      ms,
    });
  }
  retrieval.close();

  const answerable = rows.filter((r) => r.answerable);
  const unanswerable = rows.filter((r) => !r.answerable);
  const allQuotes = rows.flatMap((r) => r.quotes);
  const rate = (n, d) => (d === 0 ? null : Math.round((1000 * n) / d) / 10);
  const ms = rows.map((r) => r.ms).sort((x, y) => x - y);
  const report = {
    model,
    questions: rows.length,
    answerable: answerable.length,
    gold_cited_pct: rate(answerable.filter((r) => r.goldCited).length, answerable.length),
    gold_document_first_pct: rate(answerable.filter((r) => r.goldDocFirst).length, answerable.length),
    abstained_on_unanswerable_pct: rate(unanswerable.filter((r) => r.abstained).length, unanswerable.length),
    wrongly_abstained_pct: rate(answerable.filter((r) => r.abstained).length, answerable.length),
    citations: allQuotes.length,
    quotes_verbatim_pct: rate(allQuotes.filter((x) => x.verbatim).length, allQuotes.length),
    markers_match_citations_pct: rate(rows.filter((r) => r.markersMatch).length, rows.length),
    query_ms_p50: Math.round(ms[Math.floor(ms.length / 2)]),
    query_ms_max: Math.round(ms[ms.length - 1]),
  };
  if (values.json) process.stdout.write(JSON.stringify({ report, rows }, null, 2) + '\n');
  else {
    for (const r of rows) {
      const mark = r.answerable ? (r.goldCited ? 'GOLD ' : r.goldDocFirst ? 'doc  ' : 'miss ') : r.abstained ? 'abst ' : 'CITED';
      process.stdout.write(`${mark} ${r.question}\n`);
    }
    process.stdout.write(`\n${JSON.stringify(report, null, 2)}\n`);
  }
  if (report.quotes_verbatim_pct !== 100 && allQuotes.length > 0) {
    process.stderr.write('FAIL: a quote is not verbatim from its chunk\n');
    exitCode = 1;
  }
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);
