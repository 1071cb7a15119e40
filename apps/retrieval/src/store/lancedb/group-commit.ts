/**
 * What one group commit of the LanceDB chunk store writes: the calls of a slice replayed in call
 * order in memory, then one commit of the chunks table (an `add`, or a `mergeInsert` that also
 * deletes the replaced documents' other rows) preceded by one delete of their vectors, or one
 * commit of the vectors table. Keeps the per-document registry that tells, without a query,
 * which documents already have rows. The write queue decides when it runs.
 */
import * as lancedb from '@lancedb/lancedb';
import type { ChunkRow, VectorTableHandle } from './schema';
import { documentsFilter, ID_BATCH, MAX_CHUNKS_PER_DOCUMENT } from './sql';
import type { ChunkWrite, GroupCommitter, VectorWrite } from './write-queue';

/**
 * Applies group-commit slices to the chunks table and the current vectors table. Its methods run
 * only inside the write queue (one at a time). Errors are LanceDB's, unwrapped (the queue wraps them).
 */
/**
 * Makes the rows of `table` that match `filter` exactly `rows`, in one commit: deletes them all when `rows` is
 * empty, else upserts `rows` and deletes the matching rows that are not among them. Keyed on (org_id, id), so a
 * colliding id of another organization is never touched. Used by the group commit and by the store's direct
 * (ungrouped) replace.
 */
export async function replaceRowsWhere(table: lancedb.Table, filter: string, rows: ChunkRow[]): Promise<void> {
  if (rows.length === 0) {
    await table.delete(filter);
    return;
  }
  await table
    .mergeInsert(['org_id', 'id'])
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .whenNotMatchedBySourceDelete({ where: filter })
    .execute(rows as unknown as Record<string, unknown>[]);
}

export class LanceDbGroupCommitter implements GroupCommitter {
  /**
   * Group commit only: chunks per stored document ({@link documentKey}), read from the table at
   * open and kept in step by every commit; `null` after a failed commit (re-read before the next).
   * Lets a group know without a query which documents already have rows. Memory: one entry per
   * document (~150 bytes; 100k documents ≈ 15 MB).
   */
  private chunkCountByDocument: Map<string, number> | null = null;
  /** Group commit only: documents that have rows in the vectors table (same upkeep as above). */
  private vectorDocuments: Set<string> | null = null;

  /**
   * @param table the chunks table
   * @param currentVectors the vectors table of the current vector space (null when none is set)
   * @param markWritten notes a commit (of the chunks table, or with `true` of the vectors table)
   */
  constructor(
    private readonly table: lancedb.Table,
    private readonly currentVectors: () => VectorTableHandle | null,
    private readonly markWritten: (vectors?: boolean) => void,
  ) {}

  /** The vector space was reset: its new vectors table is empty. */
  vectorSpaceReset(): void {
    this.vectorDocuments = new Set();
  }

  private get vectors(): VectorTableHandle | null {
    return this.currentVectors();
  }

  /**
   * Applies chunk writes (in call order) as one commit of the chunks table, preceded by one delete
   * of the affected documents' vectors. Returns per call: 0 for a replace, the number of chunks
   * removed for a delete.
   */
  async applyChunkWrites(calls: ChunkWrite[]): Promise<number[]> {
    const touched = new Map<string, { orgId: string; documentId: string }>();
    for (const call of calls) {
      for (const documentId of call.kind === 'replace' ? [call.documentId] : call.documentIds) {
        touched.set(documentKey(call.orgId, documentId), { orgId: call.orgId, documentId });
      }
    }
    const registry = await this.registry();
    const stored = registry.chunks;
    // Replay in call order: `next` holds each document's rows after the calls seen so far.
    const next = new Map<string, ChunkRow[]>();
    const results = calls.map((call) => {
      if (call.kind === 'replace') {
        next.set(documentKey(call.orgId, call.documentId), call.rows);
        return 0;
      }
      let removed = 0;
      for (const documentId of call.documentIds) {
        const key = documentKey(call.orgId, documentId);
        removed += next.get(key)?.length ?? stored.get(key) ?? 0;
        next.set(key, []);
      }
      return removed;
    });
    const stale = [...touched].filter(([key]) => (stored.get(key) ?? 0) > 0).map(([, doc]) => doc);
    const staleVectors = [...touched].filter(([key]) => registry.vectors.has(key)).map(([, doc]) => doc);
    const rows = [...next.values()].flat();
    try {
      // Vectors first: a crash after this commit leaves chunks without vectors, never the reverse.
      if (this.vectors && staleVectors.length > 0) {
        await this.vectors.table.delete(documentsFilter(staleVectors));
        for (const key of touched.keys()) registry.vectors.delete(key);
        this.markWritten(true);
      }
      if (stale.length > 0) {
        const staleFilter = documentsFilter(stale);
        await replaceRowsWhere(this.table, staleFilter, rows);
      } else if (rows.length > 0) {
        await this.table.add(rows as unknown as Record<string, unknown>[]);
      }
    } catch (err) {
      this.chunkCountByDocument = null;
      this.vectorDocuments = null;
      throw err;
    }
    for (const [key, docRows] of next) {
      if (docRows.length > 0) stored.set(key, docRows.length);
      else stored.delete(key);
    }
    if (stale.length > 0 || rows.length > 0) this.markWritten();
    return results;
  }

  /**
   * Applies vector upserts as one commit of the vectors table: vectors of chunks that exist (read
   * now, in the write queue), the last call winning for a chunk given twice; an `add` when none of
   * those chunks has a vector yet, else a `mergeInsert` keyed on (org_id, id).
   */
  async applyVectorWrites(calls: VectorWrite[]): Promise<number[]> {
    const current = this.vectors;
    const live = calls.filter((call) => call.space === current);
    if (!current || live.length === 0) return calls.map(() => 0);
    const docs = new Map(live.map((call) => [documentKey(call.orgId, call.documentId), { orgId: call.orgId, documentId: call.documentId }]));
    const chunks = new Map<string, string | null>(); // (org, id) → project_id, for chunks that exist in their document
    for (const row of await this.selectRows(this.table, [...docs.values()], ['org_id', 'id', 'document_id', 'project_id'])) {
      chunks.set(`${documentKey(row.org_id, row.document_id)}\u0000${row.id}`, row.project_id ?? null);
    }
    const byChunk = new Map<string, { id: string; org_id: string; project_id: string | null; document_id: string; vector: number[] }>();
    const results = calls.map((call) => {
      if (call.space !== current) return 0;
      let stored = 0;
      for (const v of call.vectors) {
        const key = `${documentKey(call.orgId, call.documentId)}\u0000${v.chunkId}`;
        if (!chunks.has(key)) continue;
        byChunk.set(`${call.orgId}\u0000${v.chunkId}`, {
          id: v.chunkId,
          org_id: call.orgId,
          project_id: chunks.get(key)!,
          document_id: call.documentId,
          vector: v.vector,
        });
        stored++;
      }
      return stored;
    });
    const rows = [...byChunk.values()];
    if (rows.length === 0) return results;
    const registry = await this.registry();
    try {
      if (![...docs.keys()].some((key) => registry.vectors.has(key))) {
        await current.table.add(rows);
      } else {
        await current.table.mergeInsert(['org_id', 'id']).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
      }
    } catch (err) {
      this.vectorDocuments = null;
      throw err;
    }
    for (const row of rows) registry.vectors.add(documentKey(row.org_id, row.document_id));
    this.markWritten(true);
    return results;
  }

  /**
   * The per-document chunk counts and vector documents, read from the tables when not held
   * (at the first group, and after a failed commit, whose effect is then unknown).
   */
  private async registry(): Promise<{ chunks: Map<string, number>; vectors: Set<string> }> {
    if (!this.chunkCountByDocument) {
      const counts = new Map<string, number>();
      for await (const batch of this.table.query().select(['org_id', 'document_id'])) {
        for (const row of batch.toArray() as unknown as { org_id: string; document_id: string }[]) {
          const key = documentKey(row.org_id, row.document_id);
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
      }
      this.chunkCountByDocument = counts;
    }
    if (!this.vectorDocuments) {
      const docs = new Set<string>();
      if (this.vectors) {
        for await (const batch of this.vectors.table.query().select(['org_id', 'document_id'])) {
          for (const row of batch.toArray() as unknown as { org_id: string; document_id: string }[]) docs.add(documentKey(row.org_id, row.document_id));
        }
      }
      this.vectorDocuments = docs;
    }
    return { chunks: this.chunkCountByDocument, vectors: this.vectorDocuments };
  }

  /** `columns` of every row of `table` belonging to `docs`, read in slices of {@link ID_BATCH} documents. */
  private async selectRows(
    table: lancedb.Table,
    docs: { orgId: string; documentId: string }[],
    columns: string[],
  ): Promise<{ id: string; org_id: string; document_id: string; project_id: string | null }[]> {
    const out: { id: string; org_id: string; document_id: string; project_id: string | null }[] = [];
    for (let i = 0; i < docs.length; i += ID_BATCH) {
      const rows = (await table
        .query()
        .where(documentsFilter(docs.slice(i, i + ID_BATCH)))
        .select(columns)
        .limit(MAX_CHUNKS_PER_DOCUMENT * ID_BATCH)
        .toArray()) as { id: string; org_id: string; document_id: string; project_id: string | null }[];
      out.push(...rows);
    }
    return out;
  }
}

/** Map key of one document of one org (NUL cannot occur in ids, see `sqlString`). */
function documentKey(orgId: string, documentId: string): string {
  return `${orgId}\u0000${documentId}`;
}
