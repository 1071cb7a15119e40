#!/usr/bin/env node
// `npm run store:copy -- --from <lancedb dir>`: copies every org's chunks from an embedded LanceDB
// store (the retrieval service's RETRIEVAL_DATA_DIR, the service stopped: one process owns the
// directory) into the store the environment configures (VECTOR_STORE=qdrant QDRANT_URL=…
// QDRANT_COLLECTION=…, or another LanceDB directory with RETRIEVAL_DATA_DIR), document by
// document, through the store port (`listDocuments`, `documentChunks`, then the target's
// `replaceDocumentChunks`: the same writes ingestion makes). Dense vectors are not copied (the port
// has no read of them): start the retrieval service on the target and run `kbctl reindex`, which
// embeds every chunk with the service's model; searches are lexical until it is done. Copying
// again is safe (a document's chunks are replaced, not added). Used to move from the embedded
// store to Qdrant (docs/retrieval.md "Latency at scale").
// Usage: npm run store:copy -- --from /data/lancedb [--concurrency 8]
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { openRetrieval, retrievalConfigFromEnv } = require(path.join(ROOT, 'dist/apps/retrieval/src/retrieval-factory.js'));
const { LanceDbChunkStore } = require(path.join(ROOT, 'dist/apps/retrieval/src/store/lancedb-chunk-store.js'));

const { values } = parseArgs({ options: { from: { type: 'string' }, concurrency: { type: 'string', default: '8' } } });
if (!values.from) {
  process.stderr.write('usage: npm run store:copy -- --from <lancedb dir> (target: VECTOR_STORE, QDRANT_URL, QDRANT_COLLECTION or RETRIEVAL_DATA_DIR)\n');
  process.exit(2);
}
const settings = retrievalConfigFromEnv({ ...process.env, EMBEDDINGS_PROVIDER: 'none' });
if (settings.VECTOR_STORE === 'lancedb' && path.resolve(settings.RETRIEVAL_DATA_DIR) === path.resolve(values.from)) {
  process.stderr.write('the target is the source directory: set VECTOR_STORE=qdrant (QDRANT_URL) or another RETRIEVAL_DATA_DIR\n');
  process.exit(2);
}
const source = await LanceDbChunkStore.open(values.from, { optimizeDelayMs: false });
const target = await openRetrieval(settings);
const t0 = performance.now();
let documents = 0;
let chunks = 0;
try {
  const all = await source.listDocuments();
  process.stderr.write(`${all.length} documents in ${values.from}; target: ${JSON.stringify(target.describe().store)}\n`);
  let next = 0;
  const worker = async () => {
    while (next < all.length) {
      const { orgId, documentId } = all[next++];
      const docChunks = await source.documentChunks(orgId, documentId);
      await target.store.replaceDocumentChunks(orgId, documentId, docChunks);
      documents++;
      chunks += docChunks.length;
      if (documents % 1000 === 0)
        process.stderr.write(`  ${documents}/${all.length} documents, ${chunks} chunks (${Math.round((performance.now() - t0) / 1000)} s)\n`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(values.concurrency)) }, worker));
  if (typeof target.store.optimize === 'function') await target.store.optimize();
} finally {
  await source.close();
  await target.close();
}
process.stdout.write(
  `${JSON.stringify({ documents, chunks, seconds: Math.round((performance.now() - t0) / 100) / 10, next: 'start retrieval on the target, then `npm run kbctl -- reindex` to embed the chunks' })}\n`,
);
