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
// Reports p50/p95 per size and the ratio of the last size to the first (targets: p95 <= 50 ms at
// 100k, ratio <= 2; with --orgs, issue 33's: p95 <= 80 ms at 1M).
//
// `--orgs N` (issue 33): the chunks are spread over N organizations sharing the store (document d
// belongs to org d mod N, so every org's rows are interleaved with the others' in the table, as
// concurrent ingestion leaves them); each query runs for one org, rotating (query i: org i mod N),
// every 4th scoped to one of that org's 3 projects. recall@10 is then that of the store's own dense
// search (`searchDense`, top 10) against exact search (`bypassVectorIndex`) with the same filter.
// `--bulk`: documents are indexed through the same `indexDocument` calls, 200 in flight at a time,
// so the store's group commit writes them as a few large commits (10,000 rows each), with the
// background optimize off; then one `optimize()` (FTS, scalar indexes), then the vectors
// (`upsertVectors`, 200 documents in flight), then one `optimize()` (the IVF index). Same rows,
// same schema, same API as the service's; what it skips is the per-document commit and the
// optimizes in between. Reported per size: load time split into chunks, first optimize, vectors,
// second optimize; disk size of the store directory; the process's peak RSS (VmHWM, reset before
// each size's load and before the queries; the stores of earlier sizes stay open, so it is
// cumulative: the baseline RSS before each load is reported too).
// `--orgs 10,100`: one org count per size, e.g. `--sizes 100000,1000000 --orgs 10,100` compares
// orgs of the same size (10k chunks) in a store 10 times larger: the tenant isolation check.
// `--data-root DIR`: keep each size's store in DIR/<size>x<orgs>-<mode> and reuse it when it is
// already there (org ids are derived from the org number, so a reused store is queried the same).
// `--profile` (hybrid): afterwards, the same queries once more per size, timing each stage of a
// search on its own, one after the other: BM25 (top 50), query embedding, dense search (top 50 ids;
// chunks read by id included for a store without `searchDenseIds`), fusion, and reading the chunks
// of the 10 fused hits BM25 did not bring; p50/p95 per stage.
// `--org-id ID` (issue 33 item 3, used by `npm run bench:scale`): every chunk belongs to organization ID
// (one org, every document org-level: no project), with ids derived from ID (tools/lib/bench-store.mjs),
// kept under --data-root in <size>-org-<ID>-<mode>. `--build-only`: build (or find) the stores, print
// their load figures and disk size, and stop (no queries).
// Usage: npm run bench:query [-- --sizes 10000,100000 --queries 300 --lexical --profile]
//        npm run bench:query -- --sizes 100000,1000000 --orgs 100 --bulk --profile
import { createHash, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';
import { CHUNKS_PER_DOCUMENT, singleOrgDocumentId, singleOrgStoreDir, stableId } from '../lib/bench-store.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { openRetrieval, retrievalConfigFromEnv } = require(path.join(ROOT, 'dist/apps/retrieval/src/retrieval-factory.js'));

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '300' },
    lexical: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    orgs: { type: 'string', default: '1' },
    bulk: { type: 'boolean', default: false },
    'data-root': { type: 'string' },
    'org-id': { type: 'string' },
    'build-only': { type: 'boolean', default: false },
  },
});
const orgCounts = values.orgs.split(',').map(Number);
const fixedOrgId = values['org-id'];
if (fixedOrgId && orgCounts.some((n) => n !== 1)) throw new Error('--org-id builds a one-organization store: leave --orgs out');
/** Organizations of the i-th size: one --orgs value for every size, or one per size. */
const orgCountOf = (i) => orgCounts[Math.min(i, orgCounts.length - 1)];
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
  for (const para of text
    .split(/\n\s*\n/)
    .map((p) => p.replace(/\s+/g, ' ').trim())
    .filter((p) => p.length > 40)) {
    buf = buf ? `${buf} ${para}` : para;
    if (buf.length >= 250) {
      for (let i = 0; i < buf.length; i += 1200) passages.push(buf.slice(i, i + 1200));
      buf = '';
    }
  }
};
const lines = (f) =>
  readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
for (const l of lines(path.join(shared, 'datasets/scifact/corpus.jsonl'))) {
  const d = JSON.parse(l);
  passages.push(`${d.title}. ${d.abstract.join(' ')}`.slice(0, 1200));
}
for (const dir of ['txt', 'markdown', 'html']) {
  const at = path.join(shared, 'corpus', dir);
  for (const f of readdirSync(at)) {
    let text = readFileSync(path.join(at, f), 'utf8');
    if (dir === 'html')
      text = text
        .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
        .replace(/<\/(p|div|li|h\d|tr|pre)>/gi, '\n\n')
        .replace(/<[^>]+>/g, ' ')
        .replace(/&[a-z]+;/g, ' ');
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
      try {
        const { sha256, vector } = JSON.parse(line);
        cached.set(sha256, vector);
      } catch {
        // a line cut short by a killed run: embedded again
      }
    }
  }
  const hashes = passages.map((p) => createHash('sha256').update(p).digest('hex'));
  const missing = [...new Set(hashes.map((h, i) => (cached.has(h) ? -1 : i)).filter((i) => i >= 0))];
  const t0 = performance.now();
  for (let s = 0; s < missing.length; s += 64) {
    const batch = missing.slice(s, s + 64);
    const vectors = await model.embed(
      batch.map((i) => passages[i]),
      undefined,
      'bulk',
    );
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

/**
 * The organizations of a store with `orgCount` orgs: ids (derived from the org number when there
 * are several, so a kept store is queried the same), the scope of query i (its org, rotating,
 * every 4th query one of that org's projects), and the chunks of document `doc`.
 */
const tenants = (orgCount) => {
  const orgs = fixedOrgId
    ? [{ orgId: fixedOrgId, projects: [] }]
    : Array.from({ length: orgCount }, (_, k) => ({
        orgId: orgCount === 1 ? randomUUID() : stableId(`org-${k}`),
        projects: [0, 1, 2].map((p) => (orgCount === 1 ? randomUUID() : stableId(`org-${k}-project-${p}`))),
      }));
  const scopeOf = (i) => {
    const org = orgs[i % orgCount];
    return i % 4 === 3 && org.projects.length ? { orgId: org.orgId, projectId: org.projects[i % 3] } : { orgId: org.orgId };
  };
  /** 100 chunks per document; org doc mod orgCount; project as before (none with --org-id). */
  const documentOf = (doc, size) => {
    const org = orgs[doc % orgCount];
    const local = Math.floor(doc / orgCount);
    const documentId = fixedOrgId ? singleOrgDocumentId(fixedOrgId, doc) : orgCount === 1 ? randomUUID() : stableId(`doc-${doc}`);
    const projectId = local % 4 === 3 || !org.projects.length ? null : org.projects[local % 3];
    const chunks = [];
    for (let i = doc * CHUNKS_PER_DOCUMENT; i < Math.min(size, (doc + 1) * CHUNKS_PER_DOCUMENT); i++) {
      chunks.push({
        id: fixedOrgId ? stableId(`org-${fixedOrgId}-chunk-${i}`) : orgCount === 1 ? randomUUID() : stableId(`chunk-${i}`),
        orgId: org.orgId,
        projectId,
        documentId,
        fileName: `doc-${doc}.pdf`,
        chunkIndex: i - doc * CHUNKS_PER_DOCUMENT,
        text: chunkText(i),
        headingPath: [],
        startPage: 1,
        endPage: 1,
        pageSpans: [{ page: 1, offset: 0 }],
        wordBoxes: [],
      });
    }
    return { orgId: org.orgId, documentId, chunks, first: doc * CHUNKS_PER_DOCUMENT };
  };
  return { orgCount, scopeOf, documentOf };
};
/** Peak (VmHWM) and current (VmRSS) resident memory of this process, MB. */
const memory = () => {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)[1]);
  return { peakRssMb: Math.round(kb('VmHWM') / 1024), rssMb: Math.round(kb('VmRSS') / 1024) };
};
/** Resets VmHWM to the current RSS (Linux: `5` written to /proc/self/clear_refs). */
const resetPeak = () => {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not Linux, or not permitted: the peak stays cumulative
  }
};
const diskMb = (dir) => Math.round(Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024);
process.stderr.write(
  `${passages.length} source passages; sizes ${sizes.join(', ')}; ${orgCounts.join('/')} org(s); ${queries.length} queries${values.bulk ? '; bulk load' : ''}\n`,
);
const results = {};
const opened = [];
let vectors = null;
let vectorsReady = null;
try {
  // Load every size first, then interleave the queries (each query on every size in turn), so
  // that load from other processes on the machine hits every size alike and the ratio holds.
  for (const [sizeIndex, size] of sizes.entries()) {
    const { orgCount, scopeOf, documentOf } = tenants(orgCountOf(sizeIndex));
    const mode = hybrid ? 'hybrid' : 'lexical';
    const keptDir = !values['data-root']
      ? null
      : fixedOrgId
        ? singleOrgStoreDir(values['data-root'], size, fixedOrgId, mode)
        : path.join(values['data-root'], `${size}x${orgCount}-${mode}`);
    const manifestFile = keptDir && path.join(keptDir, 'bench-manifest.json');
    const reused = manifestFile && existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : null;
    if (keptDir && !reused) rmSync(keptDir, { recursive: true, force: true });
    const dataDir = keptDir ?? mkdtempSync(path.join(os.tmpdir(), 'kb-bench-query-'));
    if (reused) {
      // A kept store: delete the table versions its last optimize replaced (kept 10 s for
      // readers then, and until the next optimize), so the disk size reported is the settled one.
      const lancedb = require('@lancedb/lancedb');
      const db = await lancedb.connect(dataDir);
      for (const name of await db.tableNames()) {
        const table = await db.openTable(name);
        await table.optimize({ cleanupOlderThan: new Date() });
        table.close();
      }
      db.close();
    }
    const rssBeforeLoadMb = memory().rssMb;
    resetPeak();
    const retrieval = await openRetrieval(
      retrievalConfigFromEnv({ ...process.env, ...denseEnv, RETRIEVAL_DATA_DIR: dataDir }),
      values.bulk ? { lance: { optimizeDelayMs: false } } : {},
    );
    if (hybrid && retrieval.service.denseState().state !== 'ready') throw new Error(`hybrid search is off: ${JSON.stringify(retrieval.describe())}`);
    // The passage vectors (embedded once per machine, see the header) are needed only once the
    // chunks are written: --bulk embeds the missing ones while every size's chunks load.
    if (hybrid && !vectorsReady) vectorsReady = passageVectors(retrieval.service.embeddings);
    if (hybrid && !values.bulk) vectors = await vectorsReady;
    const entry = {
      size,
      orgCount,
      scopeOf,
      documentOf,
      label: new Set(orgCounts).size > 1 ? `${size} (${orgCount} orgs)` : String(size),
      dataDir,
      kept: Boolean(keptDir),
      manifestFile,
      retrieval,
      times: [],
      byKind: { org: [], project: [] },
      hits: 0,
      memory: {},
    };
    opened.push(entry);
    const docs = Math.ceil(size / CHUNKS_PER_DOCUMENT);
    const t0 = performance.now();
    if (reused) {
      entry.load = { ...reused.load, reused: true };
    } else if (values.bulk) {
      // Phase 1 of --bulk (every size): the chunks, then one optimize (FTS and scalar indexes).
      const phase = {};
      let t = performance.now();
      for (let d = 0; d < docs; d += 200) {
        const batch = Array.from({ length: Math.min(200, docs - d) }, (_, k) => documentOf(d + k, size));
        await Promise.all(batch.map((b) => retrieval.service.indexDocument(b.orgId, b.documentId, b.chunks)));
        if ((d / 200) % 50 === 49) process.stderr.write(`  ${size}: ${(d + 200) * 100} chunks written (${round((performance.now() - t0) / 1000)} s)\n`);
      }
      phase.chunksSeconds = round((performance.now() - t) / 1000);
      t = performance.now();
      await retrieval.store.optimize();
      phase.chunkIndexesSeconds = round((performance.now() - t) / 1000);
      process.stderr.write(`  ${size}: chunks ${phase.chunksSeconds} s, FTS/scalar indexes ${phase.chunkIndexesSeconds} s\n`);
      entry.load = { seconds: round((performance.now() - t0) / 1000), ...phase, phase: hybrid ? 'chunks' : 'done' };
    } else {
      for (let doc = 0; doc < docs; doc++) {
        const b = documentOf(doc, size);
        await retrieval.service.indexDocument(b.orgId, b.documentId, b.chunks);
        if (vectors)
          await retrieval.store.upsertVectors(
            b.orgId,
            b.documentId,
            b.chunks.map((c, k) => ({ chunkId: c.id, vector: chunkVector(vectors, b.first + k) })),
          );
        if (doc % 100 === 99) process.stderr.write(`  ${size}: ${(doc + 1) * 100} chunks indexed (${round((performance.now() - t0) / 1000)} s)\n`);
      }
      if (typeof retrieval.store.optimize === 'function') await retrieval.store.optimize();
      entry.load = { seconds: round((performance.now() - t0) / 1000), phase: 'done' };
    }
    entry.memory.chunks = { rssBeforeLoadMb, ...memory() };
    if (keptDir) writeFileSync(manifestFile, JSON.stringify({ size, orgs: orgCount, load: entry.load }));
  }
  // Phase 2 of --bulk (every size): the vectors, then one optimize (the IVF index).
  for (const entry of opened) {
    if (!vectorsReady || entry.load.phase === 'done') continue;
    vectors = await vectorsReady;
    const { size, retrieval, orgCount, documentOf } = entry;
    const docs = Math.ceil(size / CHUNKS_PER_DOCUMENT);
    const rssBeforeLoadMb = memory().rssMb;
    resetPeak();
    let t = performance.now();
    for (let d = 0; d < docs; d += 200) {
      const batch = Array.from({ length: Math.min(200, docs - d) }, (_, k) => documentOf(d + k, size));
      await Promise.all(
        batch.map((b) =>
          retrieval.store.upsertVectors(
            b.orgId,
            b.documentId,
            b.chunks.map((c, k) => ({ chunkId: c.id, vector: chunkVector(vectors, b.first + k) })),
          ),
        ),
      );
    }
    entry.load.vectorsSeconds = round((performance.now() - t) / 1000);
    t = performance.now();
    await retrieval.store.optimize();
    entry.load.vectorIndexSeconds = round((performance.now() - t) / 1000);
    entry.load.seconds = round(entry.load.seconds + entry.load.vectorsSeconds + entry.load.vectorIndexSeconds);
    entry.load.phase = 'done';
    process.stderr.write(`  ${size}: vectors ${entry.load.vectorsSeconds} s, vector index ${entry.load.vectorIndexSeconds} s\n`);
    entry.memory.vectors = { rssBeforeLoadMb, ...memory() };
    if (entry.manifestFile) writeFileSync(entry.manifestFile, JSON.stringify({ size, orgs: orgCount, load: entry.load }));
  }
  if (values['build-only']) {
    for (const e of opened) results[e.label] = { load: e.load, diskMb: diskMb(e.dataDir), dataDir: e.dataDir, memoryDuringLoad: e.memory };
  } else {
    for (const entry of opened) {
      entry.diskMb = diskMb(entry.dataDir);
      for (const q of warmup) await entry.retrieval.service.search(q, entry.scopeOf(0), 10);
    }
    if (hybrid && (process.env.VECTOR_STORE ?? 'lancedb') === 'lancedb') {
      // recall@10 of the store's dense search against exact search, same query vectors, same scope.
      const lancedb = require('@lancedb/lancedb');
      const { scopeSearchedExactly, sanitizeQuery, scopeFilter, vectorIndexPartitions, vectorIndexNprobes } = require(
        path.join(ROOT, 'dist/apps/retrieval/src/store/lancedb-chunk-store.js'),
      );
      const model = opened[0].retrieval.service.embeddings;
      const qv = await model.embed(queries.slice(0, 100), undefined, 'query');
      for (const entry of opened) {
        const db = await lancedb.connect(entry.dataDir);
        const table = await db.openTable('chunk_vectors');
        const indexed = (await table.listIndices()).filter((ix) => ix.columns.includes('vector')).map((ix) => ix.indexType);
        const partitions = await vectorIndexPartitions(table);
        let recall = 0;
        for (const [i, v] of qv.entries()) {
          const scope = entry.scopeOf(i);
          const exact = new Set(
            (
              await table
                .vectorSearch(Array.from(v))
                .distanceType('cosine')
                .where(scopeFilter(scope))
                .select(['id', '_distance'])
                .limit(10)
                .bypassVectorIndex()
                .toArray()
            ).map((r) => r.id),
          );
          const approx = await entry.retrieval.store.searchDense(Array.from(v), scope, 10);
          recall += approx.filter((h) => exact.has(h.chunk.id)).length / Math.max(1, exact.size);
        }
        entry.dense = {
          vectorIndex: indexed.join(',') || 'none (exact search)',
          partitions,
          nprobes: vectorIndexNprobes(partitions),
          'recall@10 vs exact': round(recall / qv.length),
          queries: qv.length,
        };
        // Tenant isolation: what one org's searches read, from LanceDB's analyzePlan metrics
        // (rows_scanned: table rows read; index_comparisons: index entries compared), for the
        // query shapes the store issues (BM25 with the org prefilter; dense search, exact or IVF as
        // the store chooses), against the org's own row count.
        const chunksTable = await db.openTable('chunks');
        const scope = entry.scopeOf(0);
        const filter = scopeFilter(scope);
        const metric = (plan, name) =>
          [...plan.matchAll(new RegExp(`${name}=([\\d.]+) ?(K|M)?`, 'g'))].map((m) => Math.round(Number(m[1]) * ({ K: 1e3, M: 1e6 }[m[2]] ?? 1)));
        const ftsPlan = await chunksTable
          .query()
          .fullTextSearch(new lancedb.MatchQuery(sanitizeQuery(queries[0]), 'search_text'))
          .where(filter)
          .select(['id', '_score'])
          .limit(50)
          .analyzePlan();
        const [orgRows, totalRows] = [await table.countRows(filter), await table.countRows()];
        const exactDense = scopeSearchedExactly(orgRows, totalRows, partitions, vectorIndexNprobes(partitions));
        const denseQuery = table.vectorSearch(Array.from(qv[0])).distanceType('cosine').where(filter).select(['id', '_distance']).limit(50);
        const densePlan = await (exactDense ? denseQuery.bypassVectorIndex() : denseQuery.nprobes(vectorIndexNprobes(partitions))).analyzePlan();
        entry.isolation = {
          orgRows,
          totalRows,
          bm25: {
            prefilter: /ScalarIndexQuery:[^\n]*query=\[org_id = /.test(ftsPlan) ? 'org_id bitmap index' : 'none',
            rowsScanned: metric(ftsPlan, 'rows_scanned'),
            postingsCompared: metric(ftsPlan, 'index_comparisons').reduce((a, b) => Math.max(a, b), 0),
          },
          dense: {
            path: exactDense ? 'exact over the scope' : 'IVF',
            prefilter: /ScalarIndexQuery:[^\n]*query=\[org_id = /.test(densePlan) ? 'org_id bitmap index' : 'none',
            rowsScanned: metric(densePlan, 'rows_scanned'),
            ivfVectorsCompared: exactDense ? 0 : metric(densePlan, 'index_comparisons').reduce((a, b) => Math.max(a, b), 0),
          },
        };
        chunksTable.close();
        table.close();
        db.close();
      }
    }
    resetPeak();
    for (const [i, q] of queries.entries()) {
      for (const entry of opened) {
        const scope = entry.scopeOf(i);
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
    const memoryQueries = memory();
    if (values.profile && hybrid) {
      const { fuse, fuseScored, scoredIds } = require(path.join(ROOT, 'dist/apps/retrieval/src/search/fusion.js'));
      for (const entry of opened) {
        const stage = { lexical: [], embedding: [], dense: [], fusion: [], chunks: [] };
        const { service, store } = entry.retrieval;
        for (const [i, q] of queries.entries()) {
          const scope = entry.scopeOf(i);
          let t = performance.now();
          const lexical = await store.search(q, scope, 50);
          stage.lexical.push(performance.now() - t);
          t = performance.now();
          const [vector] = await service.embeddings.embed([q], undefined, 'query');
          stage.embedding.push(performance.now() - t);
          // As RetrievalService.search: dense ids, fusion, then only the 10 kept hits' chunks that BM25 did
          // not bring are read; a store without searchDenseIds reads every dense hit's chunk in `dense`.
          t = performance.now();
          const denseIds = store.searchDenseIds ? await store.searchDenseIds(vector, scope, 50) : null;
          const dense = denseIds ? null : await store.searchDense(vector, scope, 50);
          stage.dense.push(performance.now() - t);
          t = performance.now();
          const lexicalIds = scoredIds(lexical);
          const fused = denseIds ? fuseScored(lexicalIds, denseIds, 50) : fuse(lexical, dense, 50);
          stage.fusion.push(performance.now() - t);
          t = performance.now();
          if (denseIds) {
            const brought = new Set(lexicalIds.map((h) => h.id));
            const unread = fused
              .slice(0, 10)
              .map((e) => e.id)
              .filter((id) => !brought.has(id));
            if (unread.length > 0) await store.getChunks(scope.orgId, unread);
          }
          stage.chunks.push(performance.now() - t);
        }
        entry.profile = Object.fromEntries(
          Object.entries(stage).map(([name, ms]) => [name, { p50Ms: round(percentile(ms, 50)), p95Ms: round(percentile(ms, 95)) }]),
        );
      }
    }
    for (const e of opened) {
      results[e.label] = {
        p50Ms: round(percentile(e.times, 50)),
        p95Ms: round(percentile(e.times, 95)),
        orgScopeP95Ms: round(percentile(e.byKind.org, 95)),
        projectScopeP95Ms: round(percentile(e.byKind.project, 95)),
        meanHits: round(e.hits / queries.length),
        load: e.load,
        diskMb: e.diskMb,
        memoryDuringLoad: e.memory,
        store: e.retrieval.describe().store,
        modes: e.modes,
        ...(e.dense ? { dense: e.dense } : {}),
        ...(e.isolation ? { isolation: e.isolation } : {}),
        ...(e.profile ? { stages: e.profile } : {}),
      };
      process.stderr.write(`  ${e.label}: ${JSON.stringify(results[e.label])}\n`);
    }
    results.memoryDuringQueries = { ...memoryQueries, note: 'every size open at once' };
  }
} finally {
  for (const e of opened) {
    await e.retrieval.close();
    if (!e.kept) rmSync(e.dataDir, { recursive: true, force: true });
  }
}
if (values['build-only']) {
  process.stdout.write(`${JSON.stringify({ machine: { cores: os.availableParallelism(), loadAverage: os.loadavg().map(round) }, sizes: results }, null, 2)}\n`);
} else {
  const [small, large] = [opened[0], opened.at(-1)];
  const out = {
    search: hybrid ? `hybrid (${denseEnv.EMBEDDINGS_MODEL})` : 'lexical',
    orgs: orgCounts.length === 1 ? orgCounts[0] : orgCounts,
    machine: { cores: os.availableParallelism(), loadAverage: os.loadavg().map(round) },
    sizes: results,
  };
  if (opened.length > 1 && results[small.label] && results[large.label]) {
    const [a, b] = [results[small.label], results[large.label]];
    out[`ratio ${large.label}/${small.label}`] = { p50: round(b.p50Ms / a.p50Ms), p95: round(b.p95Ms / a.p95Ms) };
    const target = large.size >= 1_000_000 ? 80 : 50;
    out.targets = { [`p95 at ${large.label} <= ${target} ms`]: b.p95Ms <= target, 'p95 ratio <= 2': b.p95Ms / a.p95Ms <= 2 };
    if (b.dense) out.targets['dense recall@10 >= 0.95'] = b.dense['recall@10 vs exact'] >= 0.95;
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
