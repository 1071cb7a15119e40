// The evals' way into a chunk store: a file extracted and chunked by ingestion's own code, its chunks
// as the store keeps them (tools/eval/controls.ts, tools/eval/verdicts.ts).
import { chunkDocument } from '../../apps/ingestion/src/chunking';
import { extractDocument } from '../../apps/ingestion/src/extraction';
import type { StoredChunk } from '../../apps/retrieval/src/store/chunk-store';

/**
 * Extracts `file` (as `contentType`, with ingestion's extractor), chunks it (ingestion's chunker,
 * default sizes) and returns its chunks as stored rows of document `documentId` of `orgId`, in no
 * project and without word boxes (the evals read text, not highlights).
 * @param chunkId the id of chunk `index` (e.g. a UUID derived from the document, or a random one)
 * @throws what the extractor throws for an unreadable file
 */
export async function storedChunksOf(
  file: string,
  contentType: string,
  doc: { orgId: string; documentId: string; fileName: string },
  chunkId: (index: number) => string,
): Promise<StoredChunk[]> {
  const extracted = await extractDocument(file, contentType);
  return chunkDocument(extracted).map((c) => ({
    id: chunkId(c.index),
    orgId: doc.orgId,
    projectId: null,
    documentId: doc.documentId,
    fileName: doc.fileName,
    chunkIndex: c.index,
    text: c.text,
    headingPath: c.headingPath,
    startPage: c.startPage,
    endPage: c.endPage,
    pageSpans: c.pageSpans,
    wordBoxes: [],
  }));
}
