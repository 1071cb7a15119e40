import { CallContext, ErrorCode } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../../../../test/medium/database';
import { openDocumentsDatabase } from '../database/database';
import { ProjectsRepository } from '../projects/projects.repository';
import { ProjectsService } from '../projects/projects.service';
import type { DocumentEntity } from './document.entity';
import { documentEvents } from './document-events';
import { DocumentsRepository } from './documents.repository';
import { DocumentsService } from './documents.service';
import { serveLocalStorage, type ServedStorage } from './testing/served-storage';

// Document versions (decisions.md "Document versions", docs/retrieval.md "Document versions: one
// switch point") against real PostgreSQL: the chain, 404/409, org and project isolation, a failed
// new version, deletion inside a chain, and the search-scope read that never sees both versions
// or neither while the switch commits.

const ORG: CallContext = { orgId: 'org-versions-a', requestId: 'r1' };
const OTHER: CallContext = { orgId: 'org-versions-b', requestId: 'r2' };
const TXT = Buffer.from('Hard hats are required on site.\n');

describe('Document versions on PostgreSQL', () => {
  const db = useTestDatabase('versions', openDocumentsDatabase);
  let served: ServedStorage | undefined;
  let repository: DocumentsRepository;
  let documents: DocumentsService;
  let projects: ProjectsService;

  beforeAll(async () => {
    served = await serveLocalStorage('kb-medium-versions-', 'medium-versions-signing-secret');
    repository = new DocumentsRepository(db(), documentEvents);
    projects = new ProjectsService(new ProjectsRepository(db()));
    documents = new DocumentsService({
      repository,
      projects,
      storage: served.storage,
      publishProcessRequested: async () => undefined,
      deleteIndexedChunks: async () => undefined,
      publishDeleted: async () => undefined,
      chunks: { list: async () => ({ chunks: [], total: 0 }), get: async () => null },
    });
  });
  afterAll(async () => {
    await served?.close();
  });

  /** Reserves a text document (optionally a new version of `replaces`) and uploads its bytes. */
  async function reserve(ctx: CallContext, projectId: string | null, replaces: string | null = null): Promise<DocumentEntity> {
    const { document, upload } = await documents.reserveUpload(ctx, {
      fileName: 'policy.txt',
      contentType: 'text/plain',
      sizeBytes: TXT.length,
      projectId,
      replaces,
    });
    const res = await fetch(upload.url, { method: upload.method, headers: { 'Content-Type': upload.recommendedContentType }, body: TXT });
    expect(res.status).toBe(200);
    return document;
  }
  /** Starts processing `doc`; the call's result. */
  const process = (ctx: CallContext, doc: DocumentEntity) => documents.process(ctx, [doc.id]);
  /** Moves a processing document to `status` as ingestion would report it. */
  const finish = (ctx: CallContext, doc: DocumentEntity, status: 'ready' | 'completed' | 'failed' = 'completed') =>
    repository.applyOutcome(
      ctx.orgId,
      doc.id,
      { status, chunkCount: status === 'failed' ? null : 1, pageCount: null, errorMessage: status === 'failed' ? 'bad file' : null },
      new Date(),
    );
  /** A document that went all the way to `completed`. */
  async function processed(ctx: CallContext, projectId: string | null, replaces: string | null = null): Promise<DocumentEntity> {
    const doc = await reserve(ctx, projectId, replaces);
    expect((await process(ctx, doc)).processed).toEqual([doc.id]);
    expect(await finish(ctx, doc)).toBe('applied');
    return documents.get(ctx, doc.id);
  }

  it('chains versions: version + 1, replaces, superseded_by set when the new version is ready, not before', async () => {
    const { project } = await projects.create(ORG, { name: 'Plans', description: null });
    const v1 = await processed(ORG, project.id);
    expect(v1).toMatchObject({ version: 1, replaces: null, supersededBy: null });
    const v2 = await reserve(ORG, project.id, v1.id);
    expect(v2).toMatchObject({ version: 2, replaces: v1.id, supersededBy: null, status: 'awaiting_upload' });
    await process(ORG, v2);
    // Processing: v1 is still current and searched, v2 is excluded.
    expect((await documents.get(ORG, v1.id)).supersededBy).toBeNull();
    expect((await documents.resolveSearchScope(ORG, project.id, [])).excludeDocumentIds).toEqual([v2.id]);
    expect((await documents.resolveSearchScope(ORG, project.id, [v1.id])).documentIds).toEqual([v1.id]);

    expect(await finish(ORG, v2, 'ready')).toBe('applied');
    expect(await documents.get(ORG, v1.id)).toMatchObject({ supersededBy: v2.id, status: 'completed' });
    expect(await documents.get(ORG, v2.id)).toMatchObject({ version: 2, replaces: v1.id, supersededBy: null, status: 'ready' });
    expect((await documents.resolveSearchScope(ORG, project.id, [])).excludeDocumentIds).toEqual([v1.id]);
    // A handbook naming v1 reads as v2; the superseded one stays live (its chunks readable, cited by earlier answers).
    expect((await documents.resolveSearchScope(ORG, project.id, [v1.id, v2.id])).documentIds).toEqual([v2.id]);
    expect(await documents.filterLive(ORG, [v1.id, v2.id])).toEqual([v1.id, v2.id]);
    // current=true lists only v2; the default lists both.
    expect((await documents.list(ORG, { projectId: project.id, current: true }, 10, 0)).items.map((d) => d.id)).toEqual([v2.id]);
    expect((await documents.list(ORG, { projectId: project.id }, 10, 0)).total).toBe(2);
    // ready → completed changes nothing more; v3 follows the chain.
    expect(await finish(ORG, v2, 'completed')).toBe('applied');
    const v3 = await processed(ORG, project.id, v2.id);
    expect(v3.version).toBe(3);
    expect((await documents.resolveSearchScope(ORG, project.id, [v1.id])).documentIds).toEqual([v3.id]);
    expect(new Set((await documents.resolveSearchScope(ORG, null, [])).excludeDocumentIds)).toEqual(new Set([v1.id, v2.id]));
  });

  it('refuses a replaces of another org or another project (404) and a superseded one (409)', async () => {
    const { project } = await projects.create(ORG, { name: 'A', description: null });
    const { project: other } = await projects.create(ORG, { name: 'B', description: null });
    const v1 = await processed(ORG, project.id);
    const orgLevel = await processed(ORG, null);
    const reserveAs = (ctx: CallContext, projectId: string | null, replaces: string) =>
      documents.reserveUpload(ctx, { fileName: 'x.txt', contentType: 'text/plain', sizeBytes: 1, projectId, replaces });
    await expect(reserveAs(OTHER, null, orgLevel.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(reserveAs(ORG, other.id, v1.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(reserveAs(ORG, null, v1.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(reserveAs(ORG, project.id, orgLevel.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(reserveAs(ORG, project.id, randomUUID())).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    // Org-level replaces org-level (both project_id null).
    expect((await reserve(ORG, null, orgLevel.id)).version).toBe(2);
    await processed(ORG, project.id, v1.id);
    await expect(reserveAs(ORG, project.id, v1.id)).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    // Nothing was inserted by the refused calls.
    expect((await documents.list(OTHER, {}, 10, 0)).total).toBe(0);
  });

  it('refuses a second replacement while the first is processing (409 at reservation, CONFLICT at process)', async () => {
    const v1 = await processed(ORG, null);
    const early = await reserve(ORG, null, v1.id);
    const a = await reserve(ORG, null, v1.id);
    await process(ORG, a);
    await expect(reserve(ORG, null, v1.id)).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    // Reserved before `a` started: it cannot start while `a` is processing.
    const started = await process(ORG, early);
    expect(started.processed).toEqual([]);
    expect(started.failed).toEqual([expect.objectContaining({ documentId: early.id, error: 'CONFLICT' })]);
    expect((await documents.get(ORG, early.id)).status).toBe('awaiting_upload');
    // `a` fails: v1 stays current, and the waiting replacement may now start.
    expect(await finish(ORG, a, 'failed')).toBe('applied');
    expect((await documents.get(ORG, v1.id)).supersededBy).toBeNull();
    expect((await process(ORG, early)).processed).toEqual([early.id]);
    await finish(ORG, early);
    expect((await documents.get(ORG, v1.id)).supersededBy).toBe(early.id);
  });

  it('re-links the chain when a version is deleted: deleting the current one makes the previous one current again', async () => {
    const v1 = await processed(ORG, null);
    const v2 = await processed(ORG, null, v1.id);
    const v3 = await processed(ORG, null, v2.id);
    await documents.delete(ORG, [v2.id]);
    expect((await documents.get(ORG, v1.id)).supersededBy).toBe(v3.id);
    expect((await documents.get(ORG, v3.id)).replaces).toBe(v1.id);
    expect((await documents.resolveSearchScope(ORG, null, [v1.id])).documentIds).toEqual([v3.id]);
    await documents.delete(ORG, [v3.id]);
    expect((await documents.get(ORG, v1.id)).supersededBy).toBeNull();
    expect((await documents.resolveSearchScope(ORG, null, [v1.id])).documentIds).toEqual([v1.id]);
    expect((await documents.resolveSearchScope(ORG, null, [])).excludeDocumentIds).not.toContain(v1.id);
    // Another org sees none of it.
    expect(await documents.resolveSearchScope(OTHER, null, [v1.id])).toEqual({ documentIds: [], excludeDocumentIds: [] });
  });

  it('every scope read during the switch sees exactly one version: never both, never neither', async () => {
    const v1 = await processed(ORG, null);
    const v2 = await reserve(ORG, null, v1.id);
    await process(ORG, v2);
    let switched = false;
    const seen: Array<'v1' | 'v2'> = [];
    let readsAfterSwitch = 0;
    const reader = (async () => {
      while (readsAfterSwitch < 10) {
        if (switched) readsAfterSwitch++;
        const [scope, handbooks] = await Promise.all([documents.resolveSearchScope(ORG, null, []), documents.resolveSearchScope(ORG, null, [v1.id])]);
        const searchable = [v1.id, v2.id].filter((id) => !scope.excludeDocumentIds.includes(id));
        expect(searchable).toHaveLength(1);
        expect(handbooks.documentIds).toHaveLength(1);
        seen.push(searchable[0] === v1.id ? 'v1' : 'v2');
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await finish(ORG, v2, 'ready')).toBe('applied');
    switched = true;
    await reader;
    expect(seen[0]).toBe('v1');
    expect(seen[seen.length - 1]).toBe('v2');
    // Once v2 was seen, v1 never comes back.
    expect(seen.slice(seen.indexOf('v2'))).not.toContain('v1');
  });
});
