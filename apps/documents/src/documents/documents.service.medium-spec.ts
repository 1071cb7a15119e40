import { CallContext, ErrorCode } from '@kb/common';
import type { ProcessRequestedEvent } from '@kb/events';
import type { LocalObjectStorage } from '@kb/storage';
import { useTestDatabase } from '../../../../test/medium/database';
import { openDocumentsDatabase } from '../database/database';
import { ProjectsRepository } from '../projects/projects.repository';
import { ProjectsService } from '../projects/projects.service';
import { documentEvents } from './document-events';
import { DocumentsRepository } from './documents.repository';
import { DocumentsService } from './documents.service';
import { serveLocalStorage, type ServedStorage } from './testing/served-storage';

// The documents use cases against their real repositories (PostgreSQL) and the real local object
// storage behind a real HTTP server (presigned PUT/GET URLs): upload slots, processing starts
// (also concurrent and failed ones), outcomes with their webhook events, deletion, org scope.
// The NATS publishers and the retrieval service are recorded calls at the edge of the service.

const ORG: CallContext = { orgId: 'org-docs-a', requestId: 'r1' };
const OTHER: CallContext = { orgId: 'org-docs-b', requestId: 'r2' };
const PDF_BYTES = Buffer.from('%PDF-1.4\n% a small file\n%%EOF\n');

describe('DocumentsService on PostgreSQL', () => {
  const db = useTestDatabase('documents', openDocumentsDatabase);
  let served: ServedStorage | undefined;
  let storage: LocalObjectStorage;
  let repository: DocumentsRepository;
  let documents: DocumentsService;
  let projects: ProjectsService;
  const calls = { processRequested: [] as ProcessRequestedEvent[], chunksDeleted: [] as string[][], deleted: [] as string[][], publishFails: false };

  beforeAll(async () => {
    served = await serveLocalStorage('kb-medium-storage-', 'medium-test-signing-secret');
    storage = served.storage;
    repository = new DocumentsRepository(db(), documentEvents);
    projects = new ProjectsService(new ProjectsRepository(db()));
    documents = new DocumentsService({
      repository,
      projects,
      storage,
      publishProcessRequested: async (event) => {
        if (calls.publishFails) throw new Error('nats down');
        calls.processRequested.push(event);
      },
      deleteIndexedChunks: async (_orgId, ids) => void calls.chunksDeleted.push(ids),
      publishDeleted: async (_orgId, ids) => void calls.deleted.push(ids),
      chunks: { list: async () => ({ chunks: [], total: 0 }), get: async () => null },
    });
  });
  beforeEach(() => {
    calls.processRequested = [];
    calls.chunksDeleted = [];
    calls.deleted = [];
    calls.publishFails = false;
  });
  afterAll(async () => {
    await served?.close();
  });

  /** Reserves a slot for a PDF and uploads `bytes` to it (null: nothing uploaded). */
  async function uploaded(ctx: CallContext, bytes: Buffer | null = PDF_BYTES, projectId: string | null = null, declared = PDF_BYTES.length) {
    const { document, upload } = await documents.reserveUpload(ctx, {
      fileName: 'Handbook.pdf',
      contentType: 'application/pdf',
      sizeBytes: declared,
      projectId,
    });
    if (bytes) {
      const res = await fetch(upload.url, { method: upload.method, headers: { 'Content-Type': upload.recommendedContentType }, body: bytes });
      expect(res.status).toBe(200);
    }
    return document;
  }
  const outboxTypes = async (id: string): Promise<string[]> =>
    (await db().query(`SELECT type FROM webhook_outbox WHERE resource_key = $1 ORDER BY seq`, [`document:${id}`])).map((r: { type: string }) => r.type);

  it("reserves an upload slot in a project of the org, and refuses another org's project", async () => {
    const { project } = await projects.create(ORG, { name: 'Safety', description: null });
    const doc = await uploaded(ORG, null, project.id);
    expect(doc).toMatchObject({ orgId: ORG.orgId, projectId: project.id, status: 'awaiting_upload', fileName: 'Handbook.pdf' });
    expect((await projects.get(ORG, project.id)).documentCount).toBe(1);
    await expect(
      documents.reserveUpload(OTHER, { fileName: 'x.pdf', contentType: 'application/pdf', sizeBytes: 1, projectId: project.id }),
    ).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
  });

  it('starts processing an uploaded document once, also when asked twice at the same time', async () => {
    const doc = await uploaded(ORG);
    const [first, second] = await Promise.all([documents.process(ORG, [doc.id]), documents.process(ORG, [doc.id])]);
    const processed = [...first.processed, ...second.processed];
    expect(processed).toEqual([doc.id]);
    expect([...first.skipped, ...second.skipped]).toEqual([{ documentId: doc.id, reason: 'not_awaiting_upload' }]);
    expect(calls.processRequested).toHaveLength(1);
    expect(calls.processRequested[0]).toMatchObject({ documentId: doc.id, orgId: ORG.orgId, sizeBytes: PDF_BYTES.length, storageKey: doc.storageKey });
    // The checked upload became the stored original; the slot is closed.
    expect((await storage.stat(doc.storageKey))?.size).toBe(PDF_BYTES.length);
    expect(await documents.get(ORG, doc.id)).toMatchObject({ status: 'processing', sizeBytes: PDF_BYTES.length });
  });

  it("skips documents without their upload, with the wrong size, unknown or another org's", async () => {
    const none = await uploaded(ORG, null);
    const wrongSize = await uploaded(ORG, PDF_BYTES, null, PDF_BYTES.length + 1);
    const foreign = await uploaded(OTHER);
    const result = await documents.process(ORG, [none.id, wrongSize.id, foreign.id]);
    expect(result.processed).toEqual([]);
    expect(result.skipped).toEqual([
      { documentId: none.id, reason: 'upload_not_found' },
      { documentId: wrongSize.id, reason: 'size_mismatch' },
      { documentId: foreign.id, reason: 'not_found' },
    ]);
    expect(calls.processRequested).toEqual([]);
  });

  it('leaves a document awaiting processing when the request cannot be published, and a retry starts it', async () => {
    const doc = await uploaded(ORG);
    calls.publishFails = true;
    const failed = await documents.process(ORG, [doc.id]);
    expect(failed.failed).toEqual([expect.objectContaining({ documentId: doc.id })]);
    expect((await documents.get(ORG, doc.id)).status).toBe('awaiting_upload');
    calls.publishFails = false;
    expect((await documents.process(ORG, [doc.id])).processed).toEqual([doc.id]);
    expect(calls.processRequested).toHaveLength(1);
  });

  it("applies processing outcomes once, in order, each with its webhook event, and only for the document's org", async () => {
    const doc = await uploaded(ORG);
    await documents.process(ORG, [doc.id]);
    const at = new Date();
    expect(await repository.applyOutcome(OTHER.orgId, doc.id, { status: 'ready', chunkCount: 3, pageCount: 1, errorMessage: null }, at)).toBe('missing');
    expect(await repository.applyOutcome(ORG.orgId, doc.id, { status: 'ready', chunkCount: 3, pageCount: 1, errorMessage: null }, at)).toBe('applied');
    expect(await repository.applyOutcome(ORG.orgId, doc.id, { status: 'ready', chunkCount: 3, pageCount: 1, errorMessage: null }, at)).toBe('ignored');
    expect(await repository.applyOutcome(ORG.orgId, doc.id, { status: 'completed', chunkCount: 3, pageCount: 1, errorMessage: null }, new Date())).toBe(
      'applied',
    );
    expect(await documents.get(ORG, doc.id)).toMatchObject({ status: 'completed', chunkCount: 3, pageCount: 1, progress: null });
    expect(await outboxTypes(doc.id)).toEqual(['document.ready', 'document.completed']);
    // A completed document is a handbook of its org only.
    expect((await documents.resolveHandbooks(ORG, [doc.id])).map((d) => d.id)).toEqual([doc.id]);
    await expect(documents.resolveHandbooks(OTHER, [doc.id])).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(await documents.filterLive(ORG, [doc.id])).toEqual([doc.id]);
  });

  it('keeps the page sizes of a processed PDF and serves one page; 404 for another org, before processing, past the end and without sizes', async () => {
    const doc = await uploaded(ORG);
    await expect(documents.getPage(ORG, doc.id, 1)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await documents.process(ORG, [doc.id]);
    const sizes = [
      { page: 1, width: 612, height: 792 },
      { page: 2, width: 841.89, height: 595.28 },
    ];
    expect(
      await repository.applyOutcome(ORG.orgId, doc.id, { status: 'completed', chunkCount: 2, pageCount: 2, pageSizes: sizes, errorMessage: null }, new Date()),
    ).toBe('applied');
    expect(await documents.getPage(ORG, doc.id, 2)).toEqual({ page: 2, width: 841.89, height: 595.28 });
    await expect(documents.getPage(OTHER, doc.id, 1)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(documents.getPage(ORG, doc.id, 3)).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
      message: `Document ${doc.id} has 2 pages; page 3 does not exist.`,
    });
    // A PDF processed before page sizes were recorded: 404 saying to upload it again.
    const old = await uploaded(ORG);
    await documents.process(ORG, [old.id]);
    await repository.applyOutcome(ORG.orgId, old.id, { status: 'completed', chunkCount: 1, pageCount: 1, errorMessage: null }, new Date());
    await expect(documents.getPage(ORG, old.id, 1)).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
      message: expect.stringMatching(/processed before they were recorded/),
    });
  });

  it("lists and shows only the caller's documents, newest first", async () => {
    const { project } = await projects.create(OTHER, { name: 'Listing', description: null });
    const a = await uploaded(OTHER, null, project.id);
    const b = await uploaded(OTHER, null, project.id);
    const page = await documents.list(OTHER, { projectId: project.id }, 10, 0);
    expect([page.total, page.items.map((d) => d.id)]).toEqual([2, [b.id, a.id]]);
    expect((await documents.list(ORG, { projectId: project.id }, 10, 0)).total).toBe(0);
    await expect(documents.get(ORG, a.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(documents.download(ORG, a.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });

  it("deletes documents with their chunks and files, and refuses (deleting nothing) when one is another org's", async () => {
    const mine = await uploaded(ORG);
    await documents.process(ORG, [mine.id]);
    const theirs = await uploaded(OTHER);
    await expect(documents.delete(ORG, [mine.id, theirs.id])).rejects.toMatchObject({ code: ErrorCode.FORBIDDEN });
    expect((await documents.get(ORG, mine.id)).id).toBe(mine.id);
    expect(calls.chunksDeleted).toEqual([]);
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(await documents.delete(ORG, [mine.id, unknown])).toEqual([mine.id]);
    expect(calls.chunksDeleted).toEqual([[mine.id]]);
    expect(calls.deleted).toEqual([[mine.id]]);
    await expect(documents.get(ORG, mine.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(await storage.stat(mine.storageKey)).toBeNull();
    expect((await documents.get(OTHER, theirs.id)).id).toBe(theirs.id);
  });
});
