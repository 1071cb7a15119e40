#!/usr/bin/env node
// `npm run bench:index`: indexing throughput for many small documents (the 5,183 SciFact abstracts).
//
// (a) store: every abstract becomes an extracted document (title as a heading, abstract as a
//     paragraph), is chunked by the ingestion chunker and converted with the ingestion's
//     `toIndexChunks` (as `npm run eval:retrieval` does), and is indexed through the retrieval
//     service's `IndexDocument` gRPC handler (→ `RetrievalService.indexDocument`) into a fresh
//     LanceDB store, BM25 only (EMBEDDINGS_PROVIDER=none), `--concurrency` calls in flight (as
//     ingestion workers issue them). Measured twice in the same run on the same chunks: with group
//     commit (the shipped store) and with `groupCommit: false` (the per-document path before it:
//     one `mergeInsert` per document, the same-run baseline). Until every call returned and the
//     FTS index covers every row (one final `optimize()`, timed in).
// (b) api: the same corpus through the whole stack (started like `npm run bench:ingest`, BM25
//     only): reserve (`POST /api/v2/documents`), upload (PUT to the signed URL), process
//     (`POST /api/v2/documents/process`, 100 ids per call, sent as uploads finish), until every
//     document is `completed` (counted with `GET /api/v2/documents?status=…`). Each document is a
//     Markdown file: `# <title>`, a blank line, the abstract.
// (c) embeddings: as (a) with the local embedding model (KB_MODELS_DIR=<repo>/../shared/models,
//     EMBEDDINGS_MODEL=all-MiniLM-L6-v2 unless set), each document indexed then embedded
//     (`IndexDocument` then `EmbedDocument`, as ingestion's enrichment step does). Reports
//     documents/s and the share of wall time during which at least one embedding call ran.
// Prints one JSON object. Targets (issue 14): (a) >= 150 documents/s, (b) <= 90 s.
//
// Usage: npm run bench:index [-- --parts store,api,embeddings --limit N --concurrency N
//          --baseline-limit N --ingestion-concurrency N]
//   --baseline-limit N: index only the first N documents on the baseline path (its cost per
//     document grows with the table, so a smaller N flatters it; the default is the whole corpus).
//   KB_BENCH_NODE_OPTIONS: NODE_OPTIONS for every service of (b), e.g. a CPU profile of each:
//     KB_BENCH_NODE_OPTIONS="--require $PWD/tools/lib/cpu-profile.cjs" (see that file).
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { percentile, pool } from '../lib/measure.mjs';

const require = createRequire(import.meta.url);
const dist = (p) => require(path.join(ROOT, 'dist', p));

const { values } = parseArgs({
  options: {
    parts: { type: 'string', default: 'store,api,embeddings' },
    limit: { type: 'string' },
    concurrency: { type: 'string', default: '16' },
    'baseline-limit': { type: 'string' },
    'ingestion-concurrency': { type: 'string' },
  },
});
const parts = new Set(values.parts.split(','));
const concurrency = Math.max(1, Number(values.concurrency));
const shared = path.resolve(ROOT, '../shared');
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const now = () => performance.now();

let corpus = readFileSync(path.join(shared, 'datasets/scifact/corpus.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));
if (values.limit) corpus = corpus.slice(0, Number(values.limit));

/** CPU seconds (user + system) a process has used so far, from /proc (Linux), or null. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

/** Stable UUID-shaped id of a corpus document id (SHA-1, RFC 4122 §4.3 layout). */
const uuidOf = (id) => {
  const h = createHash('sha1').update(`bench:${id}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
};
const abstractOf = (d) => (Array.isArray(d.abstract) ? d.abstract.join(' ') : String(d.abstract ?? ''));

/** The IndexDocument requests of the corpus for one org, built the way the eval harness builds them. */
function indexRequests(orgId) {
  const { chunkDocument } = dist('apps/ingestion/src/chunking/index.js');
  const { toIndexChunks } = dist('apps/ingestion/src/pipeline/document-processor.js');
  return corpus.map((d) => {
    const documentId = uuidOf(d.doc_id);
    const extracted = {
      blocks: [
        ...(d.title ? [{ kind: 'heading', text: d.title, page: null, level: 1 }] : []),
        { kind: 'paragraph', text: abstractOf(d) || d.title || '', page: null },
      ],
      pageCount: null,
      title: d.title ?? null,
    };
    return { documentId, chunks: toIndexChunks({ documentId, orgId, projectId: null, fileName: `${d.doc_id}.md` }, chunkDocument(extracted)), corpus: 0 };
  });
}

/**
 * Indexes `requests` into a fresh store opened with `lance` options; with `embed`, each document
 * is embedded after it is indexed. Returns seconds, documents/s, chunks, and embedding time.
 */
async function indexRun(label, requests, { lance = {}, env = {}, embed = false, embeddings = {} } = {}) {
  const { retrievalGrpcHandlers } = dist('apps/retrieval/src/grpc/retrieval.grpc-controller.js');
  const { openRetrieval, retrievalConfigFromEnv } = dist('apps/retrieval/src/retrieval-factory.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-index-'));
  const retrieval = await openRetrieval(retrievalConfigFromEnv({ ...process.env, RETRIEVAL_DATA_DIR: dataDir, ...env }), { lance, embeddings });
  const orgId = requests[0]?.chunks[0]?.orgId ?? randomUUID();
  const ctx = { orgId, requestId: randomUUID() };
  // Busy time of the embedding model: the union of the intervals during which a call ran.
  let embedBusyMs = 0;
  let active = 0;
  let since = 0;
  const model = retrieval.service.embeddings;
  if (model) {
    const embedFn = model.embed.bind(model);
    model.embed = async (...args) => {
      if (active++ === 0) since = now();
      try {
        return await embedFn(...args);
      } finally {
        if (--active === 0) embedBusyMs += now() - since;
      }
    };
  }
  try {
    if (embed && !model) throw new Error(`no embedding model: ${JSON.stringify(retrieval.describe().embeddings)}`);
    const handlers = retrievalGrpcHandlers(retrieval.service);
    let chunks = 0;
    let done = 0;
    const t0 = now();
    await pool(requests, concurrency, async (req) => {
      const res = await handlers.indexDocument(req, ctx);
      chunks += res.chunkCount;
      if (embed) await handlers.embedDocument({ documentId: req.documentId, corpus: 0 }, ctx);
      if (++done % 1000 === 0) process.stderr.write(`  ${label}: ${done} documents (${round((now() - t0) / 1000, 1)} s)\n`);
    });
    if (typeof retrieval.store.optimize === 'function') await retrieval.store.optimize();
    const seconds = (now() - t0) / 1000;
    const status = typeof retrieval.store.indexStatus === 'function' ? await retrieval.store.indexStatus() : undefined;
    const out = { documents: requests.length, chunks, seconds: round(seconds), documentsPerSecond: round(requests.length / seconds, 1), index: status };
    if (embed) {
      out.embeddingShare = round(embedBusyMs / (seconds * 1000), 3);
      if (model.stats) out.meanTextsPerForwardPass = round(model.stats.texts / Math.max(1, model.stats.passes), 1);
    }
    process.stderr.write(`  ${label}: ${JSON.stringify(out)}\n`);
    return out;
  } finally {
    await retrieval.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const result = {
  corpus: { documents: corpus.length, file: 'datasets/scifact/corpus.jsonl' },
  machine: { cores: os.cpus().length, loadAverage: os.loadavg().map((x) => round(x)) },
  concurrency,
};

if (parts.has('store')) {
  step(`(a) store: ${corpus.length} documents, BM25 only, ${concurrency} IndexDocument calls in flight`);
  const requests = indexRequests(randomUUID());
  const env = { EMBEDDINGS_PROVIDER: 'none' };
  const grouped = await indexRun('group commit', requests, { env });
  const baselineRequests = values['baseline-limit'] ? requests.slice(0, Number(values['baseline-limit'])) : requests;
  const baseline = await indexRun('baseline (groupCommit: false)', baselineRequests, { env, lance: { groupCommit: false } });
  result.store = {
    groupCommit: grouped,
    baseline: { ...baseline, path: 'LanceDbChunkStore groupCommit: false (one mergeInsert per document, as before)' },
    speedup: round(grouped.documentsPerSecond / baseline.documentsPerSecond, 1),
    target: { 'documents/s >= 150': grouped.documentsPerSecond >= 150 },
  };
}

if (parts.has('api')) {
  const ingestionConcurrency = values['ingestion-concurrency'];
  step(
    `(b) api: ${corpus.length} documents through the whole stack, BM25 only${ingestionConcurrency ? `, INGESTION_CONCURRENCY=${ingestionConcurrency}` : ''}`,
  );
  const { startStack } = await import('../lib/stack.mjs');
  const { newTenant } = await import('../lib/api-client.mjs');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-index-api-'));
  const { natsServer } = ensureSystemPackages({ ocr: false });
  const stack = await startStack({
    dataDir,
    natsServer,
    quiet: true,
    env: {
      LOG_LEVEL: 'warn',
      EMBEDDINGS_PROVIDER: 'none',
      ...(process.env.KB_BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.KB_BENCH_NODE_OPTIONS } : {}),
      ...(ingestionConcurrency ? { INGESTION_CONCURRENCY: ingestionConcurrency } : {}),
    },
  });
  try {
    const { call, key } = newTenant(stack, 'Bench index', 10_000_000);
    const count = async (status) => {
      const res = await fetch(`${stack.baseUrl}/api/v2/documents?status=${status}&limit=1`, { headers: { Authorization: `Bearer ${key}` } });
      return (await res.json()).pagination.total;
    };
    const cpuBefore = new Map([...stack.services].map(([name, child]) => [name, cpuSeconds(child.pid)]));
    const t0 = now();
    let uploaded = [];
    const processCalls = [];
    const flush = () => {
      const ids = uploaded;
      uploaded = [];
      if (ids.length > 0) processCalls.push(call('POST', '/api/v2/documents/process', { document_ids: ids }));
    };
    const reserveMs = [];
    const putMs = [];
    await pool(corpus, concurrency, async (d) => {
      const body = Buffer.from(`# ${d.title}\n\n${abstractOf(d)}\n`);
      let t = now();
      const slot = await call('POST', '/api/v2/documents', { file_name: `${d.doc_id}.md`, content_type: 'text/markdown', size_bytes: body.length });
      reserveMs.push(now() - t);
      t = now();
      const put = await fetch(slot.upload.url.replace('localhost', '127.0.0.1'), {
        method: slot.upload.method ?? 'PUT',
        headers: { 'Content-Type': 'text/markdown' },
        body,
      });
      await put.arrayBuffer();
      putMs.push(now() - t);
      if (!put.ok) throw new Error(`upload failed: ${put.status}`);
      uploaded.push(slot.id);
      if (uploaded.length >= 100) flush();
    });
    flush();
    const processed = (await Promise.all(processCalls)).reduce((n, r) => n + r.processed.length, 0);
    const uploadSeconds = (now() - t0) / 1000;
    process.stderr.write(`  api: reserved and uploaded ${corpus.length}, processing started for ${processed} (${round(uploadSeconds, 1)} s)\n`);
    let completed = 0;
    let failed = 0;
    for (;;) {
      [completed, failed] = await Promise.all([count('completed'), count('failed')]);
      if (completed + failed >= processed) break;
      process.stderr.write(`  api: ${completed} completed, ${failed} failed (${round((now() - t0) / 1000, 1)} s)\n`);
      await new Promise((r) => setTimeout(r, 2000));
    }
    const seconds = (now() - t0) / 1000;
    const cpu = Object.fromEntries([...stack.services].map(([name, child]) => [name, round(cpuSeconds(child.pid) - cpuBefore.get(name), 1)]));
    result.api = {
      documents: corpus.length,
      completed,
      failed,
      seconds: round(seconds, 1),
      reserveAndUploadSeconds: round(uploadSeconds, 1),
      // Latency of each request as the client saw it, `concurrency` requests in flight.
      reserveMs: { p50: round(percentile(reserveMs, 50), 1), p95: round(percentile(reserveMs, 95), 1) },
      uploadMs: { p50: round(percentile(putMs, 50), 1), p95: round(percentile(putMs, 95), 1) },
      loadAverage: os.loadavg().map((x) => round(x, 1)),
      documentsPerSecond: round(completed / seconds, 1),
      ingestionConcurrency: Number(ingestionConcurrency ?? stack.env.INGESTION_CONCURRENCY ?? 0) || 'service default',
      cpuSecondsByService: cpu,
      target: { 'seconds <= 90': seconds <= 90 && failed === 0 },
    };
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (parts.has('embeddings')) {
  const env = {
    EMBEDDINGS_PROVIDER: 'local',
    KB_MODELS_DIR: process.env.KB_MODELS_DIR ?? path.join(shared, 'models'),
    EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2',
  };
  step(`(c) embeddings: ${corpus.length} documents, indexed then embedded with ${env.EMBEDDINGS_MODEL}`);
  const embedded = await indexRun('embeddings on', indexRequests(randomUUID()), { env, embed: true });
  // Same run: the model with `coalesce: true` (forward passes filled from several waiting
  // EmbedDocument calls) against its default (one call's texts per pass, 1-2 for an abstract).
  const baselineRequests = values['baseline-limit'] ? indexRequests(randomUUID()).slice(0, Number(values['baseline-limit'])) : indexRequests(randomUUID());
  const coalesced = await indexRun('embeddings on, coalesce: true', baselineRequests, { env, embed: true, embeddings: { coalesce: true } });
  result.embeddings = {
    model: env.EMBEDDINGS_MODEL,
    ...embedded,
    coalesced: { ...coalesced, path: 'LocalEmbeddingModel coalesce: true (forward passes filled across EmbedDocument calls)' },
    'coalesced / default': round(coalesced.documentsPerSecond / embedded.documentsPerSecond, 2),
  };
}

process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
