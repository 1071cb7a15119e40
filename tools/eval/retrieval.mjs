#!/usr/bin/env node
// `npm run eval:retrieval -- --corpus <corpus.jsonl> --claims <claims.jsonl>`: retrieval quality on a
// BEIR-style data set (SciFact format), through the real indexing path.
//
// Every corpus document ({doc_id, title, abstract[]}) becomes an extracted document (title as a
// heading, abstract as one paragraph), is chunked by the ingestion chunker (`chunkDocument`,
// default sizes), converted with the ingestion's `toIndexChunks`, and indexed by the retrieval
// service's gRPC handler `IndexDocument` into a fresh store (LanceDB in a temporary folder, or
// Qdrant when VECTOR_STORE=qdrant). Each claim with evidence is then searched through the retrieval
// service (the same hybrid search the Search RPC runs; dense and rerank when configured by the usual
// env vars) with `--depth` chunks; chunks are folded to documents by their best rank.
// Relevant documents are the keys of each claim's `evidence` (binary relevance, BEIR convention:
// claims without evidence are skipped). Prints one JSON object: nDCG@10, recall@10, recall@100.
//
// Metric definitions (Järvelin & Kekäläinen 2002; BEIR, Thakur et al. 2021):
//   nDCG@k = DCG@k / IDCG@k, DCG@k = Σ_{i≤k} rel_i / log2(i + 1), rel ∈ {0,1}
//   recall@k = |relevant ∩ top k| / |relevant|; both averaged over claims.
// Options: --limit N (first N claims), --depth N (chunks fetched per claim, default 300). Progress goes to stderr.
import { randomUUID, createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
    limit: { type: 'string' },
    depth: { type: 'string', default: '300' },
  },
});
if (!values.corpus || !values.claims) {
  process.stderr.write('usage: npm run eval:retrieval -- --corpus <corpus.jsonl> --claims <claims.jsonl> [--limit N] [--depth N]\n');
  process.exit(2);
}

const { chunkDocument } = dist('apps/ingestion/src/chunking/index.js');
const { toIndexChunks } = dist('apps/ingestion/src/pipeline/document-processor.js');
const { retrievalGrpcHandlers } = dist('apps/retrieval/src/grpc/retrieval.grpc-controller.js');
const { openRetrieval } = dist('apps/retrieval/src/retrieval-factory.js');

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
let claims = readJsonl(values.claims).filter((c) => c.evidence && Object.keys(c.evidence).length > 0);
if (values.limit) claims = claims.slice(0, Number(values.limit));
const depth = Number(values.depth);

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-retrieval-'));
const orgId = randomUUID();
const ctx = { orgId, requestId: randomUUID() };
const { service, store, close, describe } = await openRetrieval({ ...process.env, RETRIEVAL_DATA_DIR: dataDir });
process.stderr.write(`indexing ${corpus.length} documents, then ${claims.length} queries\n`);
try {
  const handlers = retrievalGrpcHandlers(service);
  const docOf = new Map();
  const t0 = performance.now();
  let chunkCount = 0;
  for (const d of corpus) {
    const documentId = uuidOf(d.doc_id);
    docOf.set(documentId, String(d.doc_id));
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
  }
  if (typeof store.optimize === 'function') await store.optimize();
  const indexSeconds = (performance.now() - t0) / 1000;

  let ndcg10 = 0;
  let recall10 = 0;
  let recall100 = 0;
  const t1 = performance.now();
  for (const c of claims) {
    const relevant = new Set(Object.keys(c.evidence).map(String));
    const { hits } = await service.search(c.claim, { orgId }, depth);
    const ranked = [];
    const seen = new Set();
    for (const h of hits) {
      const doc = docOf.get(h.chunk.documentId);
      if (!seen.has(doc)) {
        seen.add(doc);
        ranked.push(doc);
      }
    }
    let dcg = 0;
    for (let i = 0; i < Math.min(10, ranked.length); i++) if (relevant.has(ranked[i])) dcg += 1 / Math.log2(i + 2);
    let idcg = 0;
    for (let i = 0; i < Math.min(10, relevant.size); i++) idcg += 1 / Math.log2(i + 2);
    ndcg10 += dcg / idcg;
    recall10 += ranked.slice(0, 10).filter((d) => relevant.has(d)).length / relevant.size;
    recall100 += ranked.slice(0, 100).filter((d) => relevant.has(d)).length / relevant.size;
  }
  const n = claims.length;
  const round = (x) => Math.round(x * 10000) / 10000;
  process.stdout.write(
    `${JSON.stringify(
      {
        dataset: { corpus: path.basename(values.corpus), claims: path.basename(values.claims), documents: corpus.length, chunks: chunkCount, queries: n },
        retrieval: describe(),
        'nDCG@10': round(ndcg10 / n),
        'recall@10': round(recall10 / n),
        'recall@100': round(recall100 / n),
        indexSeconds: round(indexSeconds),
        msPerQuery: round((performance.now() - t1) / n),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await close();
  rmSync(dataDir, { recursive: true, force: true });
}
