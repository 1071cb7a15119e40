#!/usr/bin/env node
// `npm run bench:query`: search latency of the retrieval service at 10k and 100k chunks.
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
// Reports p50/p95 per size and the 100k/10k ratio (targets: p95 < 50 ms at 100k, ratio < 3).
// Usage: npm run bench:query [-- --sizes 10000,100000 --queries 300]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { openRetrieval } = require(path.join(ROOT, 'dist/apps/retrieval/src/retrieval-factory.js'));

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '10000,100000' }, queries: { type: 'string', default: '300' } } });
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

process.stderr.write(`${passages.length} source passages; sizes ${sizes.join(', ')}; ${queries.length} queries\n`);
const results = {};
const opened = [];
try {
  // Load every size first, then interleave the queries (each query on every size in turn), so
  // that load from other processes on the machine hits every size alike and the ratio holds.
  for (const size of sizes) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-query-'));
    const retrieval = await openRetrieval({ ...process.env, RETRIEVAL_DATA_DIR: dataDir });
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
      if (doc % 100 === 99) process.stderr.write(`  ${size}: ${start + 100} chunks indexed (${round((performance.now() - t0) / 1000)} s)\n`);
    }
    if (typeof retrieval.store.optimize === 'function') await retrieval.store.optimize();
    entry.loadSeconds = (performance.now() - t0) / 1000;
    for (const q of warmup) await retrieval.service.search(q, { orgId: entry.orgId }, 10);
  }
  for (const [i, q] of queries.entries()) {
    for (const entry of opened) {
      const scope = i % 4 === 3 ? { orgId: entry.orgId, projectId: entry.projects[i % 3] } : { orgId: entry.orgId };
      const t = performance.now();
      const { hits } = await entry.retrieval.service.search(q, scope, 10);
      const ms = performance.now() - t;
      entry.times.push(ms);
      entry.byKind[scope.projectId ? 'project' : 'org'].push(ms);
      entry.hits += hits.length;
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
const out = { sizes: results };
if (results[small] && results[large]) {
  out[`ratio ${large}/${small}`] = { p50: round(results[large].p50Ms / results[small].p50Ms), p95: round(results[large].p95Ms / results[small].p95Ms) };
  out.targets = { [`p95 at ${large} < 50 ms`]: results[large].p95Ms < 50, 'p95 ratio < 3': results[large].p95Ms / results[small].p95Ms < 3 };
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
