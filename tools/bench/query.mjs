#!/usr/bin/env node
// `npm run bench:query`: search latency of the retrieval service at 10k and 100k chunks, hybrid.
//
// Chunks are generated from real text: the SciFact abstracts (../shared/datasets/scifact) and the
// text files of ../shared/corpus (txt, markdown, html with tags stripped), cut into passages of
// ~250-1,200 characters (the ingestion chunker's target range). Chunk i joins passage i mod n with
// a second passage picked by a fixed stride, so 100k chunks are distinct texts with a realistic
// vocabulary. They are indexed through the retrieval service (`RetrievalService.indexDocument`,
// 100 chunks per document, the store's own background optimization), into one fresh store per size
// (LanceDB by default; VECTOR_STORE=qdrant QDRANT_URL=… for Qdrant). After a warm-up, the same
// queries (SciFact claims, top 10, the whole org; every 4th query scoped to a project) run
// interleaved: each query on every size in turn, so machine load affects every size alike.
//
// Hybrid (the default): the local embedding model (KB_MODELS_DIR=<repo>/../shared/models,
// EMBEDDINGS_MODEL=all-MiniLM-L6-v2 unless set) embeds every query at search time, as the
// service does. Chunk vectors are NOT the model's vector of each chunk text (100k chunk texts
// take ~15 min to embed on 2 cores): the model embeds each source passage once, and a chunk's
// vector is the L2-normalised sum of the vectors of the two passages it joins (the first alone
// when the second contributes no text). Passage vectors are cached per machine in
// ~/.cache/kb-platform/bench (KB_BENCH_CACHE to move it), keyed by model name and SHA-256 of the
// text. They are stored with `upsertVectors` after each document is indexed. Reports, per size,
// recall@10 of the dense index against exact search (LanceDB `bypassVectorIndex`) for the same
// query vectors. `--lexical` measures BM25 only.
// Reports p50/p95 per size and the 100k/10k ratio (targets: p95 <= 50 ms at 100k, ratio <= 2).
// `--profile` (hybrid): afterwards, the same queries once more per size, timing each stage of a
// search on its own, one after the other: BM25 (top 50), query embedding, dense search (top 50,
// chunks read by id included) and fusion; p50/p95 per stage.
// Usage: npm run bench:query [-- --sizes 10000,100000 --queries 300 --lexical --profile]
import { createHash, randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { openRetrieval, retrievalConfigFromEnv } = require(path.join(ROOT, 'dist/apps/retrieval/src/retrieval-factory.js'));

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '10000,100000' }, queries: { type: 'string', default: '300' }, lexical: { type: 'boolean', default: false }, profile: { type: 'boolean', default: false } } });
const hybrid = !values.lexical;
const denseEnv = hybrid
  ? {
      EMBEDDINGS_PROVIDER: process.env.EMBEDDINGS_PROVIDER ?? 'local',
      KB_MODELS_DIR: process.env.KB_MODELS_DIR ?? path.resolve(ROOT, '../shared/models'),
      EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2',
    }
  : { EMBEDDINGS_PROVIDER: 'none' };
const sizes = values.sizes.split(',').map(Number);
const shared = path.resolve(ROOT, '../shared');

// ---- passages ----
const passages = [];
const addText = (text) => {
  let buf = '';
  for (const para of text.split(/\n\s*\n/).map((p) => p.replace(/\s+/g, ' ').trim()).filter((p) => p.length > 40)) {
    buf = buf ? `${buf} ${para}` : para;
    if (buf.length >= 250) {
      for (let i = 0; i < buf.length; i += 1200) passages.push(buf.slice(i, i + 1200));
      buf = '';
    }
  }
};
const lines = (f) => readFileSync(f, 'utf8').split('\n').filter((l) => l.trim());
for (const l of lines(path.join(shared, 'datasets/scifact/corpus.jsonl'))) {
  const d = JSON.parse(l);
  passages.push(`${d.title}. ${d.abstract.join(' ')}`.slice(0, 1200));
}
for (const dir of ['txt', 'markdown', 'html']) {
  const at = path.join(shared, 'corpus', dir);
  for (const f of readdirSync(at)) {
    let text = readFileSync(path.join(at, f), 'utf8');
    if (dir === 'html') text = text.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ').replace(/<\/(p|div|li|h\d|tr|pre)>/gi, '\n\n').replace(/<[^>]+>/g, ' ').replace(/&[a-z]+;/g, ' ');
    addText(text);
  }
}
const claims = lines(path.join(shared, 'datasets/scifact/claims_train.jsonl')).map((l) => JSON.parse(l).claim);
const queries = claims.slice(0, Number(values.queries));
const warmup = claims.slice(-30);

const chunkText = (i) => {
  const n = passages.length;
  const a = passages[i % n];
  const b = passages[(Math.floor(i / n) * 7919 + i * 31) % n];
  return `${a}\n\n${b.slice(0, Math.max(0, 1200 - a.length))}`.trim();
};

const round = (x) => Math.round(x * 100) / 100;

/** The two passages chunk i joins: [index of a, index of b or -1 when b adds no text]. */
const chunkParts = (i) => {
  const n = passages.length;
  const a = i % n;
  const b = (Math.floor(i / n) * 7919 + i * 31) % n;
  return [a, passages[a].length >= 1200 ? -1 : b];
};

/**
 * Model vectors of every passage, from the per-machine cache, embedding (and caching) the missing
 * ones. Cache file: <cache>/<model>.jsonl, one `{ sha256, vector }` per line.
 */
async function passageVectors(model) {
  const dir = process.env.KB_BENCH_CACHE ?? path.join(os.homedir(), '.cache/kb-platform/bench');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${model.model.replace(/[^\w.-]+/g, '_')}.jsonl`);
  const cached = new Map();
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const { sha256, vector } = JSON.parse(line);
      cached.set(sha256, vector);
    }
  }
  const hashes = passages.map((p) => createHash('sha256').update(p).digest('hex'));
  const missing = [...new Set(hashes.map((h, i) => (cached.has(h) ? -1 : i)).filter((i) => i >= 0))];
  const t0 = performance.now();
  for (let s = 0; s < missing.length; s += 64) {
    const batch = missing.slice(s, s + 64);
    const vectors = await model.embed(batch.map((i) => passages[i]), undefined, 'bulk');
    appendFileSync(file, batch.map((i, k) => JSON.stringify({ sha256: hashes[i], vector: Array.from(vectors[k]) })).join('\n') + '\n');
    batch.forEach((i, k) => cached.set(hashes[i], Array.from(vectors[k])));
    if ((s / 64) % 20 === 0) process.stderr.write(`  embedded ${s + batch.length}/${missing.length} passages (${round((performance.now() - t0) / 1000)} s)\n`);
  }
  process.stderr.write(`  passage vectors: ${passages.length - missing.length} cached, ${missing.length} embedded (${file})\n`);
  return hashes.map((h) => cached.get(h));
}

/** L2-normalised sum of the parts' vectors (see the header). */
const chunkVector = (vectors, i) => {
  const [a, b] = chunkParts(i);
  const v = b < 0 ? [...vectors[a]] : vectors[a].map((x, k) => x + vectors[b][k]);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
};

process.stderr.write(`${passages.length} source passages; sizes ${sizes.join(', ')}; ${queries.length} queries\n`);
const results = {};
const opened = [];
let vectors = null;
try {
  // Load every size first, then interleave the queries (each query on every size in turn), so
  // that load from other processes on the machine hits every size alike and the ratio holds.
  for (const size of sizes) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-query-'));
    const retrieval = await openRetrieval(retrievalConfigFromEnv({ ...process.env, ...denseEnv, RETRIEVAL_DATA_DIR: dataDir }));
    if (hybrid && retrieval.service.denseState().state !== 'ready') throw new Error(`hybrid search is off: ${JSON.stringify(retrieval.describe())}`);
    if (hybrid && !vectors) vectors = await passageVectors(retrieval.service.embeddings);
    const entry = { size, dataDir, retrieval, orgId: randomUUID(), projects: [randomUUID(), randomUUID(), randomUUID()], times: [], byKind: { org: [], project: [] }, hits: 0 };
    opened.push(entry);
    const t0 = performance.now();
    for (let start = 0, doc = 0; start < size; start += 100, doc++) {
      const documentId = randomUUID();
      const projectId = doc % 4 === 3 ? null : entry.projects[doc % 3];
      const chunks = [];
      for (let i = start; i < Math.min(size, start + 100); i++) {
        chunks.push({ id: randomUUID(), orgId: entry.orgId, projectId, documentId, fileName: `doc-${doc}.pdf`, chunkIndex: i - start, text: chunkText(i), headingPath: [], startPage: 1, endPage: 1, pageSpans: [{ page: 1, offset: 0 }] });
      }
      await retrieval.service.indexDocument(entry.orgId, documentId, chunks);
      if (vectors) await retrieval.store.upsertVectors(entry.orgId, documentId, chunks.map((c, k) => ({ chunkId: c.id, vector: chunkVector(vectors, start + k) })));
      if (doc % 100 === 99) process.stderr.write(`  ${size}: ${start + 100} chunks indexed (${round((performance.now() - t0) / 1000)} s)\n`);
    }
    if (typeof retrieval.store.optimize === 'function') await retrieval.store.optimize();
    entry.loadSeconds = (performance.now() - t0) / 1000;
    for (const q of warmup) await retrieval.service.search(q, { orgId: entry.orgId }, 10);
  }
  if (hybrid && (process.env.VECTOR_STORE ?? 'lancedb') === 'lancedb') {
    // recall@10 of the dense index against exact search, same query vectors, whole org.
    const lancedb = require('@lancedb/lancedb');
    const model = opened[0].retrieval.service.embeddings;
    const qv = await model.embed(queries.slice(0, 100), undefined, 'query');
    for (const entry of opened) {
      const db = await lancedb.connect(entry.dataDir);
      const table = await db.openTable('chunk_vectors');
      const indexed = (await table.listIndices()).filter((ix) => ix.columns.includes('vector')).map((ix) => ix.indexType);
      // Probe as many partitions as the store does for this index (vectorIndexNprobes), so the
      // figure is the recall the service's dense searches actually get.
      const { vectorIndexNprobes, vectorIndexPartitions } = require(path.join(ROOT, 'dist/apps/retrieval/src/store/lancedb-chunk-store.js'));
      const partitions = await vectorIndexPartitions(table);
      const nprobes = vectorIndexNprobes(partitions);
      let recall = 0;
      for (const v of qv) {
        const search = () => table.vectorSearch(Array.from(v)).distanceType('cosine').where(`org_id = '${entry.orgId}'`).select(['id', '_distance']).limit(10);
        const exact = new Set((await search().bypassVectorIndex().toArray()).map((r) => r.id));
        const approx = await search().nprobes(nprobes).toArray();
        recall += approx.filter((r) => exact.has(r.id)).length / Math.max(1, exact.size);
      }
      entry.dense = { vectorIndex: indexed.join(',') || 'none (exact search)', partitions, nprobes, 'recall@10 vs exact': round(recall / qv.length), queries: qv.length };
      table.close();
      db.close();
    }
  }
  for (const [i, q] of queries.entries()) {
    for (const entry of opened) {
      const scope = i % 4 === 3 ? { orgId: entry.orgId, projectId: entry.projects[i % 3] } : { orgId: entry.orgId };
      const t = performance.now();
      const { hits, mode } = await entry.retrieval.service.search(q, scope, 10);
      const ms = performance.now() - t;
      entry.modes = entry.modes ?? {};
      entry.modes[mode] = (entry.modes[mode] ?? 0) + 1;
      entry.times.push(ms);
      entry.byKind[scope.projectId ? 'project' : 'org'].push(ms);
      entry.hits += hits.length;
    }
  }
  if (values.profile && hybrid) {
    const { fuse } = require(path.join(ROOT, 'dist/apps/retrieval/src/search/fusion.js'));
    for (const entry of opened) {
      const stage = { lexical: [], embedding: [], dense: [], fusion: [] };
      const { service, store } = entry.retrieval;
      for (const [i, q] of queries.entries()) {
        const scope = i % 4 === 3 ? { orgId: entry.orgId, projectId: entry.projects[i % 3] } : { orgId: entry.orgId };
        let t = performance.now();
        const lexical = await store.search(q, scope, 50);
        stage.lexical.push(performance.now() - t);
        t = performance.now();
        const [vector] = await service.embeddings.embed([q], undefined, 'query');
        stage.embedding.push(performance.now() - t);
        t = performance.now();
        const dense = await store.searchDense(vector, scope, 50);
        stage.dense.push(performance.now() - t);
        t = performance.now();
        fuse(lexical, dense, 50);
        stage.fusion.push(performance.now() - t);
      }
      entry.profile = Object.fromEntries(Object.entries(stage).map(([name, ms]) => [name, { p50Ms: round(percentile(ms, 50)), p95Ms: round(percentile(ms, 95)) }]));
    }
  }
  for (const e of opened) {
    results[e.size] = {
      p50Ms: round(percentile(e.times, 50)),
      p95Ms: round(percentile(e.times, 95)),
      orgScopeP95Ms: round(percentile(e.byKind.org, 95)),
      projectScopeP95Ms: round(percentile(e.byKind.project, 95)),
      meanHits: round(e.hits / queries.length),
      loadSeconds: round(e.loadSeconds),
      store: e.retrieval.describe().store,
      modes: e.modes,
      ...(e.dense ? { dense: e.dense } : {}),
      ...(e.profile ? { stages: e.profile } : {}),
    };
    process.stderr.write(`  ${e.size}: ${JSON.stringify(results[e.size])}\n`);
  }
} finally {
  for (const e of opened) {
    await e.retrieval.close();
    rmSync(e.dataDir, { recursive: true, force: true });
  }
}
const [small, large] = sizes;
const out = { search: hybrid ? `hybrid (${denseEnv.EMBEDDINGS_MODEL})` : 'lexical', machine: { loadAverage: os.loadavg().map(round) }, sizes: results };
if (results[small] && results[large]) {
  out[`ratio ${large}/${small}`] = { p50: round(results[large].p50Ms / results[small].p50Ms), p95: round(results[large].p95Ms / results[small].p95Ms) };
  out.targets = { [`p95 at ${large} <= 50 ms`]: results[large].p95Ms <= 50, 'p95 ratio <= 2': results[large].p95Ms / results[small].p95Ms <= 2 };
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
