#!/usr/bin/env node
// `npm run eval:retrieval -- --corpus <corpus.jsonl> --claims <claims.jsonl> [--split all|tune|report] [--sweep]`:
// retrieval quality on a BEIR data set in SciFact's format, through the real indexing path, BM25
// only AND hybrid in one run.
//
// Indexing: every corpus document ({doc_id, title, abstract[]}) becomes an extracted document
// (title as a heading, abstract as one paragraph), is chunked by the ingestion chunker
// (`chunkDocument`, default sizes), converted with the ingestion's `toIndexChunks`, indexed by the
// retrieval service's gRPC handler `IndexDocument` and embedded by `EmbedDocument` (the enrichment
// step), into a fresh store (LanceDB in a temporary folder, or Qdrant when VECTOR_STORE=qdrant).
// The embedding model is the service's (`EMBEDDINGS_*`, `KB_MODELS_DIR`); without one, hybrid is
// reported as null with the reason.
//
// Relevance follows BEIR exactly (Thakur et al. 2021, SciFact's qrels): a claim's relevant
// documents are its `cited_doc_ids`, binary, and EVERY claim is a query (809 on SciFact train,
// 919 query-document pairs, as in BEIR's scifact/qrels/train.tsv).
// Queries: each claim is searched `--depth` chunks deep (default 300); chunks fold to documents
// by their best rank. Reported per mode:
//   bm25   = the store's BM25 search (what the service answers with no embedding model);
//   dense  = the store's nearest-neighbour search alone (for reference);
//   hybrid = `RetrievalService.search`, the Search RPC's own path (fusion as configured,
//            RETRIEVAL_FUSION etc.; the shipped default when unset).
// Metrics (Järvelin & Kekäläinen 2002; BEIR): nDCG@10 = DCG@10 / IDCG@10, DCG = Σ rel_i / log2(i+1),
// recall@k = |relevant ∩ top k| / |relevant|, averaged over queries.
//
// Splits (tune on one part, report on the other): `--split tune` = claims with an even id,
// `--split report` = claims with an odd id, `--split all` (default) = every claim, with the
// figures of each half printed as well (`halves`).
// `--sweep` also fuses the same BM25 and dense lists with every fusion of a grid (RRF k; Qdrant's
// DBSF; convex combination alpha with theoretical-min-max and min-max normalisation;
// apps/retrieval/src/search/fusion.ts)
// and prints each one's figures, best first, for the selected split (with --split all: for all
// claims and for each half, ordered by the tuning half's nDCG@10).
// `--index-dir DIR` keeps the built index in DIR and reuses it on the next run with the same corpus
// and model (tuning runs); without it a temporary folder is used and deleted.
// Other options: --limit N (first N claims of the split). Progress goes to stderr; one JSON object
// goes to stdout.
import { randomUUID, createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const dist = (p) => require(path.join(ROOT, 'dist', p));

const { values } = parseArgs({
  options: {
    corpus: { type: 'string' },
    claims: { type: 'string' },
    split: { type: 'string', default: 'all' },
    sweep: { type: 'boolean', default: false },
    'index-dir': { type: 'string' },
    limit: { type: 'string' },
    depth: { type: 'string', default: '300' },
  },
});
if (!values.corpus || !values.claims || !['all', 'tune', 'report'].includes(values.split)) {
  process.stderr.write(
    'usage: npm run eval:retrieval -- --corpus <corpus.jsonl> --claims <claims.jsonl> [--split all|tune|report] [--sweep] [--index-dir DIR] [--limit N] [--depth N]\n',
  );
  process.exit(2);
}

const { chunkDocument } = dist('apps/ingestion/src/chunking/index.js');
const { toIndexChunks } = dist('apps/ingestion/src/pipeline/document-processor.js');
const { retrievalGrpcHandlers } = dist('apps/retrieval/src/grpc/retrieval.grpc-controller.js');
const { openRetrieval, retrievalConfigFromEnv } = dist('apps/retrieval/src/retrieval-factory.js');
const { fuse } = dist('apps/retrieval/src/search/fusion.js');

const readJsonl = (file) =>
  readFileSync(path.resolve(file), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

/** Stable UUID-shaped id of a corpus document id (SHA-1, RFC 4122 §4.3 layout). */
const uuidOf = (id) => {
  const h = createHash('sha1').update(`eval:${id}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

const corpus = readJsonl(values.corpus);
const allClaims = readJsonl(values.claims).filter((c) => Array.isArray(c.cited_doc_ids) && c.cited_doc_ids.length > 0);
let claims = allClaims.filter((c) => values.split === 'all' || (Number(c.id) % 2 === 0) === (values.split === 'tune'));
if (values.limit) claims = claims.slice(0, Number(values.limit));
const depth = Number(values.depth);

// A fixed org id, so a kept index (--index-dir) is found again.
const orgId = 'a0e1c0de-0000-5000-8000-000000000001';
const ctx = { orgId, requestId: randomUUID() };
const keep = values['index-dir'] ? path.resolve(values['index-dir']) : null;
const dataDir = keep ?? mkdtempSync(path.join(os.tmpdir(), 'kb-eval-retrieval-'));
if (keep) mkdirSync(keep, { recursive: true });
const { service, store, close, describe } = await openRetrieval(retrievalConfigFromEnv({ ...process.env, RETRIEVAL_DATA_DIR: dataDir }));
const dense = service.denseState();
const marker = path.join(dataDir, 'eval-index.json');
const fingerprint = JSON.stringify({ corpus: path.resolve(values.corpus), documents: corpus.length, space: dense.state === 'ready' ? dense.space : null });
const reuse = keep && existsSync(marker) && readFileSync(marker, 'utf8') === fingerprint;
process.stderr.write(
  `${reuse ? 'reusing the index in ' + dataDir : `indexing ${corpus.length} documents`}, then ${claims.length} queries (split ${values.split})\n`,
);

const docOf = new Map(corpus.map((d) => [uuidOf(d.doc_id), String(d.doc_id)]));
const round = (x) => Math.round(x * 10000) / 10000;
try {
  const handlers = retrievalGrpcHandlers(service);
  let chunkCount = 0;
  let indexSeconds = null;
  let embedSeconds = null;
  if (!reuse) {
    const t0 = performance.now();
    for (const [n, d] of corpus.entries()) {
      const documentId = uuidOf(d.doc_id);
      const abstract = Array.isArray(d.abstract) ? d.abstract.join(' ') : String(d.abstract ?? d.text ?? '');
      const extracted = {
        blocks: [
          ...(d.title ? [{ kind: 'heading', text: d.title, page: null, level: 1 }] : []),
          { kind: 'paragraph', text: abstract || d.title || '', page: null },
        ],
        pageCount: null,
        title: d.title ?? null,
      };
      const event = { documentId, orgId, projectId: null, fileName: `${d.doc_id}.txt` };
      const chunks = toIndexChunks(event, chunkDocument(extracted));
      const res = await handlers.indexDocument({ documentId, chunks, corpus: 0 }, ctx);
      chunkCount += res.chunkCount;
      if ((n + 1) % 1000 === 0) process.stderr.write(`  indexed ${n + 1}\n`);
    }
    if (typeof store.optimize === 'function') await store.optimize();
    indexSeconds = (performance.now() - t0) / 1000;
    if (dense.state === 'ready') {
      const t1 = performance.now();
      for (const [n, d] of corpus.entries()) {
        await handlers.embedDocument({ documentId: uuidOf(d.doc_id), corpus: 0 }, ctx);
        if ((n + 1) % 1000 === 0) process.stderr.write(`  embedded ${n + 1}\n`);
      }
      embedSeconds = (performance.now() - t1) / 1000;
    }
    if (keep) writeFileSync(marker, fingerprint);
  }

  /** Distinct corpus doc ids of a chunk list, in order of their best rank. */
  const toDocs = (hits) => {
    const ranked = [];
    const seen = new Set();
    for (const h of hits) {
      const doc = docOf.get(h.chunk.documentId);
      if (!seen.has(doc)) {
        seen.add(doc);
        ranked.push(doc);
      }
    }
    return ranked;
  };
  /** nDCG@10, recall@10 and recall@100 of one ranking. */
  const score = (ranked, relevant) => {
    let dcg = 0;
    for (let i = 0; i < Math.min(10, ranked.length); i++) if (relevant.has(ranked[i])) dcg += 1 / Math.log2(i + 2);
    let idcg = 0;
    for (let i = 0; i < Math.min(10, relevant.size); i++) idcg += 1 / Math.log2(i + 2);
    const hitsAt = (k) => ranked.slice(0, k).filter((d) => relevant.has(d)).length / relevant.size;
    return { ndcg10: dcg / idcg, recall10: hitsAt(10), recall100: hitsAt(100) };
  };
  const totals = () => ({ ndcg10: 0, recall10: 0, recall100: 0 });
  const addTo = (acc, s) => {
    acc.ndcg10 += s.ndcg10;
    acc.recall10 += s.recall10;
    acc.recall100 += s.recall100;
  };
  const report = (acc, n) => ({ 'nDCG@10': round(acc.ndcg10 / n), 'recall@10': round(acc.recall10 / n), 'recall@100': round(acc.recall100 / n) });

  const grid = [
    ...[5, 10, 20, 40, 60, 100].map((k) => ({ method: 'rrf', k })),
    { method: 'dbsf' },
    ...['tmm', 'minmax'].flatMap((normalization) => [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9].map((alpha) => ({ method: 'convex', alpha, normalization }))),
  ];
  const sums = { bm25: totals(), dense: totals(), hybrid: totals() };
  // With --split all, the same figures per half (tune = even claim ids, report = odd).
  const halves = { tune: { n: 0, bm25: totals(), hybrid: totals() }, report: { n: 0, bm25: totals(), hybrid: totals() } };
  const sweepSums = grid.map(() => ({ all: totals(), tune: totals(), report: totals() }));
  const denseOn = dense.state === 'ready';
  const hybridModes = { lexical: 0, hybrid: 0 };
  let degraded = null;
  const t2 = performance.now();
  const embedder = denseOn ? service.embeddingModel() : null;
  for (const c of claims) {
    const relevant = new Set(c.cited_doc_ids.map(String));
    const half = halves[Number(c.id) % 2 === 0 ? 'tune' : 'report'];
    half.n++;
    const lexical = await store.search(c.claim, { orgId }, depth);
    const lexicalScore = score(toDocs(lexical), relevant);
    addTo(sums.bm25, lexicalScore);
    addTo(half.bm25, lexicalScore);
    if (!denseOn) continue;
    const [vector] = await embedder.embed([c.claim], undefined, 'query');
    const nearest = await store.searchDense(vector, { orgId }, depth);
    addTo(sums.dense, score(toDocs(nearest), relevant));
    const result = await service.search(c.claim, { orgId }, depth);
    hybridModes[result.mode]++;
    degraded ??= result.degradedReason ?? null;
    const hybridScore = score(toDocs(result.hits), relevant);
    addTo(sums.hybrid, hybridScore);
    addTo(half.hybrid, hybridScore);
    if (values.sweep) {
      grid.forEach((settings, i) => {
        const s = score(toDocs(fuse(lexical, nearest, depth, settings)), relevant);
        addTo(sweepSums[i].all, s);
        addTo(sweepSums[i][Number(c.id) % 2 === 0 ? 'tune' : 'report'], s);
      });
    }
  }
  const n = claims.length;
  const out = {
    dataset: {
      corpus: path.basename(values.corpus),
      claims: path.basename(values.claims),
      split: values.split,
      documents: corpus.length,
      chunks: reuse ? null : chunkCount,
      queries: n,
      qrels: claims.reduce((s, c) => s + c.cited_doc_ids.length, 0),
      relevance: 'cited_doc_ids (BEIR)',
    },
    retrieval: describe(),
    depth,
    bm25: report(sums.bm25, n),
    hybrid: denseOn ? { ...report(sums.hybrid, n), modes: hybridModes, ...(degraded ? { degradedReason: degraded } : {}) } : null,
    dense: denseOn ? report(sums.dense, n) : null,
    'hybrid - bm25 nDCG@10': denseOn ? round((sums.hybrid.ndcg10 - sums.bm25.ndcg10) / n) : null,
    ...(denseOn ? {} : { hybridOff: dense.reason ?? dense.state }),
    ...(values.split === 'all'
      ? {
          halves: Object.fromEntries(
            Object.entries(halves).map(([name, h]) => [name, { queries: h.n, bm25: report(h.bm25, h.n), hybrid: denseOn ? report(h.hybrid, h.n) : null }]),
          ),
        }
      : {}),
    ...(values.sweep && denseOn
      ? {
          // Best first by nDCG@10 on the tuning half when it is among the queries, else on all of them.
          sweep: grid
            .map((settings, i) => ({
              fusion: settings,
              ...report(sweepSums[i].all, n),
              ...(values.split === 'all' ? { tune: report(sweepSums[i].tune, halves.tune.n), report: report(sweepSums[i].report, halves.report.n) } : {}),
            }))
            .sort((a, b) => (b.tune ?? b)['nDCG@10'] - (a.tune ?? a)['nDCG@10']),
        }
      : {}),
    indexSeconds: indexSeconds === null ? null : round(indexSeconds),
    embedSeconds: embedSeconds === null ? null : round(embedSeconds),
    msPerQuery: round((performance.now() - t2) / n),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await close();
  if (!keep) rmSync(dataDir, { recursive: true, force: true });
}
