// Naming shared by the benchmarks that build or query a synthetic chunk store (tools/bench/query.mjs
// builds it; tools/bench/scale.mjs registers its documents and drives the stack over it), so a store
// kept under a data root is found again and its documents carry the same ids on every run.
import { createHash } from 'node:crypto';
import path from 'node:path';

/** Chunks per synthetic document (the bench store's documents are 100 chunks each, the last one shorter). */
export const CHUNKS_PER_DOCUMENT = 100;

/**
 * Deterministic UUID-shaped id (version nibble 4, variant 8) from a label: SHA-256 of `bench-query:<label>`.
 * @param {string} label
 * @returns {string}
 */
export function stableId(label) {
  const h = createHash('sha256').update(`bench-query:${label}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Id of the `doc`-th document of a store whose chunks all belong to organization `orgId` (`--org-id`).
 * @param {string} orgId
 * @param {number} doc 0-based document number
 * @returns {string} a UUID-shaped id
 */
export function singleOrgDocumentId(orgId, doc) {
  return stableId(`org-${orgId}-doc-${doc}`);
}

/**
 * Folder of a kept store of `size` chunks that all belong to `orgId`, under `dataRoot`.
 * @param {string} dataRoot the `--data-root` folder
 * @param {number} size chunks
 * @param {string} orgId
 * @param {'hybrid' | 'lexical'} [mode]
 * @returns {string}
 */
export function singleOrgStoreDir(dataRoot, size, orgId, mode = 'hybrid') {
  return path.join(dataRoot, `${size}-org-${orgId}-${mode}`);
}
