#!/usr/bin/env node
// `npm run eval:answers`: answer quality of the agent through the API. Starts the whole stack on a
// fresh data folder and free ports (with the embedding model of ../shared/models when present),
// uploads the documents, asks every question with POST /api/v2/agent/query and prints a JSON report.
//
// Two dataset formats (detected from the file):
// - the question set written over ../shared/corpus (default, tools/eval/answers-questions.json):
//   gold cited (a citation's quote contains the gold phrase), gold document first, abstained on
//   unanswerable questions, quotes verbatim (read back from the index; must be 100 %);
// - SQuAD 2.0 (`--dataset ../shared/datasets/squad2/dev-half-a.json`): each article is one text
//   document in its own project and its questions are asked in that project. An answerable question
//   is answered well when a gold answer string stands in the FIRST citation's quote; an unanswerable
//   one when the answer has no citations. `--split tune|report|all` picks articles (tools/eval/squad2.mjs),
//   `--limit N` the first N questions of each article. A question set whose questions carry `split`
//   (libs/text/models/answerability/train/product-questions.json) takes `--split tune|report|all` too.
// Both report `confidence`: precision and coverage of answers with confidence >= 0.7 (the first
// citation holds the gold answer) and a reliability table (confidence bins against that accuracy).
// With LLM_BASE_URL (+ LLM_MODEL, LLM_API_KEY) set, the model-configured path is evaluated.
// `--safety`: the organization has the Safety Assistant on (as npm start's demo organization), the
// sample safety corpus is loaded and chat_type is omitted (SQuAD: only project_id is sent), so every
// question goes through routing (docs/agent.md "Routing"); `routed` in the report counts the agents.
// Usage: npm run eval:answers [-- --dataset FILE --split tune|report|all --limit N --top-k N --concurrency N --safety --json]
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { startStack } from '../lib/stack.mjs';
import { kbctlFor, newTenant, processDocuments, uploadDocument } from '../lib/api-client.mjs';
import { pool } from '../lib/measure.mjs';
import { articleText, isSquad, loadSquad, normalizeForMatch, splitArticles } from './squad2.mjs';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string' },
    questions: { type: 'string' },
    split: { type: 'string', default: 'all' },
    limit: { type: 'string' },
    'top-k': { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '2' },
    safety: { type: 'boolean' },
    json: { type: 'boolean' },
  },
});
const datasetFile = values.dataset ?? values.questions ?? path.join(ROOT, 'tools/eval/answers-questions.json');
const CORPUS = path.resolve(ROOT, '../shared/corpus');
const MODELS = path.resolve(ROOT, '../shared/models');
const TYPES = { '.md': 'text/markdown', '.html': 'text/html', '.txt': 'text/plain', '.pdf': 'application/pdf' };
const norm = normalizeForMatch;
const raw = JSON.parse(readFileSync(datasetFile, 'utf8'));
const squad = isSquad(raw);
const limit = values.limit ? Number(values.limit) : Infinity;
if (!(limit > 0)) throw new Error('--limit must be a positive integer');

build();
const require = createRequire(import.meta.url);
const { createAsyncClient } = require(path.join(ROOT, 'dist/libs/common/src/index.js'));
const { retrievalV1 } = require(path.join(ROOT, 'dist/libs/proto/src/index.js'));
const { embeddingsConfigFromEnv, openEmbeddingModel } = require(path.join(ROOT, 'dist/libs/models/src/index.js'));

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-'));
const { natsServer } = ensureSystemPackages();
// The real embedding model when it is beside the repository (dense retrieval and semantic sentence
// choice), unless the caller configured one; without any the stack runs lexical only.
const stackEnv =
  existsSync(path.join(MODELS, 'all-MiniLM-L6-v2')) && !process.env.KB_MODELS_DIR ? { KB_MODELS_DIR: MODELS, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' } : {};
// The report's `embeddings` names the model the stack runs with: the stack inherits this process's
// environment, and it is opened here with the services' own parser and opener.
const opened = await openEmbeddingModel(embeddingsConfigFromEnv({ ...process.env, ...stackEnv }));
const embeddings = opened.model ? opened.model.model : 'none';
const stack = await startStack({ dataDir, natsServer, quiet: true, env: stackEnv });
let exitCode = 0;

const rate = (n, d) => (d === 0 ? null : Math.round((1000 * n) / d) / 10);
/** Percentage (one decimal) of `items` for which `pred` holds; null for none. */
const pctOf = (items, pred) => rate(items.filter(pred).length, items.length);
const round3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);

/**
 * Confidence figures: `right` is whether the answer's first citation holds the gold answer.
 * Precision and coverage of answers with confidence >= 0.7 (over every question), Brier score over the
 * answers that cite something, and a reliability table over those answers (bins of 0.1: answers,
 * mean confidence, share right). Abstentions are left out of the table: their confidence is the
 * probability that the best sentence they did not quote would have answered, which the API does not show.
 */
function confidenceReport(rows) {
  const scored = rows.filter((r) => typeof r.confidence === 'number');
  if (scored.length === 0) return { reported: false };
  const confident = scored.filter((r) => r.confidence >= 0.7);
  const answered = scored.filter((r) => !r.abstained);
  const bins = [];
  for (let b = 0; b < 10; b++) {
    const inBin = answered.filter((r) => Math.min(9, Math.floor(r.confidence * 10)) === b);
    if (inBin.length === 0) continue;
    bins.push({
      bin: `${(b / 10).toFixed(1)}-${((b + 1) / 10).toFixed(1)}`,
      n: inBin.length,
      mean_confidence: round3(inBin.reduce((s, r) => s + r.confidence, 0) / inBin.length),
      right_pct: pctOf(inBin, (r) => r.right),
    });
  }
  return {
    reported: true,
    confident_n: confident.length,
    confident_precision_pct: pctOf(confident, (r) => r.right),
    confident_coverage_pct: rate(confident.length, scored.length),
    confident_coverage_of_answerable_pct: rate(confident.filter((r) => r.answerable).length, scored.filter((r) => r.answerable).length),
    answers_with_citations: answered.length,
    brier_of_answers: answered.length ? round3(answered.reduce((s, r) => s + (r.confidence - (r.right ? 1 : 0)) ** 2, 0) / answered.length) : null,
    reliability_of_answers: bins,
  };
}

try {
  const { org, call } = newTenant(stack, 'Eval', 100000);
  const topK = Number(values['top-k']);
  const routed = {};
  if (values.safety) {
    kbctlFor(stack, 'org', 'safety', '--org', org.id, '--on');
    step('loading the sample safety corpus (samples/safety-corpus)');
    process.env.DOCUMENTS_GRPC_URL = `127.0.0.1:${stack.ports.documents}`;
    kbctlFor(stack, 'safety', 'load', path.join(ROOT, 'samples/safety-corpus'));
  }
  const ask = async (q, projectId) => {
    const t0 = performance.now();
    const routing = projectId ? (values.safety ? { project_id: projectId } : { chat_type: 'project', project_id: projectId }) : {};
    const a = await call('POST', '/api/v2/agent/query', { question: q, top_k: topK, ...routing });
    routed[a.agent] = (routed[a.agent] ?? 0) + 1;
    return { a, ms: performance.now() - t0 };
  };
  let report;
  let rows;

  if (squad) {
    const articles = splitArticles(loadSquad(datasetFile), values.split);
    step(`uploading ${articles.length} articles (split ${values.split}), one project each`);
    const projects = [];
    for (const art of articles) {
      const project = await call('POST', '/api/v2/projects', { name: art.title.slice(0, 200) });
      const id = await uploadDocument(call, {
        fileName: `${art.title}.txt`,
        contentType: 'text/plain',
        bytes: Buffer.from(articleText(art), 'utf8'),
        projectId: project.id,
      });
      projects.push({ art, projectId: project.id, documentId: id });
    }
    await processDocuments(
      call,
      projects.map((p) => p.documentId),
    );
    const items = projects.flatMap((p) => p.art.questions.slice(0, limit).map((q) => ({ ...q, title: p.art.title, projectId: p.projectId })));
    step(`asking ${items.length} questions (${items.filter((q) => q.answerable).length} answerable)`);
    let model = '';
    rows = await pool(items, Number(values.concurrency), async (q) => {
      const { a, ms } = await ask(q.question, q.projectId);
      model = a.model;
      const first = a.citations[0]?.quote ?? '';
      const goldFirst = q.answerable && q.answers.some((g) => norm(first).includes(norm(g)));
      return {
        id: q.id,
        article: q.title,
        question: q.question,
        answerable: q.answerable,
        gold: q.answers,
        goldFirst,
        goldAnyCitation: q.answerable && a.citations.some((c) => q.answers.some((g) => norm(c.quote).includes(norm(g)))),
        abstained: a.citations.length === 0,
        confidence: typeof a.confidence === 'number' ? a.confidence : null,
        right: goldFirst,
        first_quote: first,
        ms,
      };
    });
    const answerable = rows.filter((r) => r.answerable);
    const unanswerable = rows.filter((r) => !r.answerable);
    const ms = rows.map((r) => r.ms).sort((x, y) => x - y);
    report = {
      dataset: path.relative(ROOT, datasetFile),
      split: values.split,
      articles: articles.map((a) => a.title),
      model,
      embeddings,
      questions: rows.length,
      answerable: answerable.length,
      unanswerable: unanswerable.length,
      gold_in_first_citation_pct: pctOf(answerable, (r) => r.goldFirst),
      gold_in_any_citation_pct: pctOf(answerable, (r) => r.goldAnyCitation),
      wrongly_abstained_pct: pctOf(answerable, (r) => r.abstained),
      abstained_on_unanswerable_pct: pctOf(unanswerable, (r) => r.abstained),
      targets: { gold_in_first_citation_pct: 75, abstained_on_unanswerable_pct: 50 },
      confidence: confidenceReport(rows),
      query_ms_p50: Math.round(ms[Math.floor(ms.length / 2)]),
      query_ms_p95: Math.round(ms[Math.floor(ms.length * 0.95)]),
    };
  } else {
    const set = raw;
    step(`uploading ${set.documents.length} documents`);
    const docIds = {};
    for (const rel of set.documents) {
      docIds[rel] = await uploadDocument(call, {
        fileName: path.basename(rel),
        contentType: TYPES[path.extname(rel)],
        bytes: readFileSync(path.join(CORPUS, rel)),
      });
    }
    await processDocuments(call, Object.values(docIds));

    const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, `127.0.0.1:${stack.ports.retrieval}`);
    const chunkCache = new Map();
    /** Text of a cited chunk, read back from the index (a search for the quote within its document). */
    const chunkText = async (c) => {
      if (chunkCache.has(c.chunk_id)) return chunkCache.get(c.chunk_id);
      // A citation of the shared safety corpus (--safety) is read back from that corpus.
      const own = Object.values(docIds).includes(c.document_id);
      const res = await retrieval.search(
        { query: c.quote, documentIds: [c.document_id], excludeDocumentIds: [], topK: 50, corpus: own ? 0 : 1 },
        { orgId: org.id },
      );
      for (const h of res.hits) chunkCache.set(h.chunk.id, h.chunk.text);
      return chunkCache.get(c.chunk_id) ?? null;
    };

    // `--split tune|report` keeps the questions of that half when the set labels them (the product
    // question set of libs/text/models/answerability/train/product-set.mjs); `all` (default) keeps every one.
    if (values.split !== 'all' && !set.questions.some((q) => q.split)) throw new Error(`${datasetFile} has no split labels: use --split all`);
    if (!['tune', 'report', 'all'].includes(values.split)) throw new Error(`--split must be tune, report or all (got ${values.split})`);
    const questions = set.questions.filter((q) => values.split === 'all' || q.split === values.split).slice(0, limit);
    step(`asking ${questions.length} questions`);
    rows = [];
    let model = '';
    for (const q of questions) {
      const { a, ms } = await ask(q.question);
      model = a.model;
      const quotes = [];
      for (const c of a.citations) {
        const text = await chunkText(c);
        quotes.push({ index: c.index, file: c.file_name, verbatim: text !== null && text.includes(c.quote), quote: c.quote });
      }
      const markers = [...new Set([...a.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((x, y) => x - y);
      const markersMatch = JSON.stringify(markers) === JSON.stringify(a.citations.map((c) => c.index));
      const goldFirst = q.gold !== null && a.citations.length > 0 && norm(a.citations[0].quote).includes(norm(q.gold));
      rows.push({
        question: q.question,
        answerable: q.gold !== null,
        goldCited: q.gold !== null && a.citations.some((c) => norm(c.quote).includes(norm(q.gold))),
        goldDocFirst: q.gold !== null && a.citations[0]?.file_name === path.basename(q.file),
        abstained: a.citations.length === 0,
        confidence: typeof a.confidence === 'number' ? a.confidence : null,
        right: goldFirst,
        markersMatch,
        quotes,
        agent: a.agent,
        ms,
      });
    }
    retrieval.close();

    const answerable = rows.filter((r) => r.answerable);
    const unanswerable = rows.filter((r) => !r.answerable);
    const allQuotes = rows.flatMap((r) => r.quotes);
    const ms = rows.map((r) => r.ms).sort((x, y) => x - y);
    report = {
      dataset: path.relative(ROOT, datasetFile),
      split: values.split,
      model,
      embeddings,
      questions: rows.length,
      answerable: answerable.length,
      gold_cited_pct: pctOf(answerable, (r) => r.goldCited),
      gold_in_first_citation_pct: pctOf(answerable, (r) => r.right),
      gold_document_first_pct: pctOf(answerable, (r) => r.goldDocFirst),
      abstained_on_unanswerable_pct: pctOf(unanswerable, (r) => r.abstained),
      wrongly_abstained_pct: pctOf(answerable, (r) => r.abstained),
      citations: allQuotes.length,
      quotes_verbatim_pct: pctOf(allQuotes, (x) => x.verbatim),
      markers_match_citations_pct: pctOf(rows, (r) => r.markersMatch),
      confidence: confidenceReport(rows),
      query_ms_p50: Math.round(ms[Math.floor(ms.length / 2)]),
      query_ms_max: Math.round(ms[ms.length - 1]),
    };
    if (report.quotes_verbatim_pct !== 100 && allQuotes.length > 0) {
      process.stderr.write('FAIL: a quote is not verbatim from its chunk\n');
      exitCode = 1;
    }
  }
  report.safety_assistant = Boolean(values.safety);
  report.routed = routed;
  if (values.json) process.stdout.write(JSON.stringify({ report, rows }, null, 2) + '\n');
  else {
    if (!squad) {
      for (const r of rows) {
        const mark = r.answerable ? (r.goldCited ? 'GOLD ' : r.goldDocFirst ? 'doc  ' : 'miss ') : r.abstained ? 'abst ' : 'CITED';
        process.stdout.write(`${mark} ${r.question}\n`);
      }
    }
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  }
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);
