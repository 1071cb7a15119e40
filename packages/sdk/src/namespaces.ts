// The resource namespaces of KbClient (`kb.projects`, `kb.documents`, `kb.runs`…): every operation
// of the OpenAPI document as a method, over the typed `kb.api` client. Where a helper function
// exists (listDocuments, runCheck, createWebhook…) the method calls it, so each operation has one
// implementation; every list is a PagedList (async iterable across pages, `firstPage()`).
// No Node built-ins: the namespaces are the same in the browser entry.
import { listAuditEvents, type AuditEventFilter } from './audit';
import { createBatch, exportBatch, getBatch, listBatches, waitForBatch, type ListBatchesOptions, type WaitForBatchOptions } from './batches';
import { chat, chatText } from './chat';
import {
  clearRequirementReview,
  compareCheckRuns,
  createCheckRun,
  downloadReport,
  getCheckRun,
  listCheckRunRequirements,
  listCheckRuns,
  rerunCheckRun,
  runCheck,
  setRequirementReview,
  stopCheckRun,
  triggerCheckRun,
  verifyRequirement,
  waitForCheckRun,
  type ListCheckRunsOptions,
  type ReportFormat,
  type WaitForCheckRunOptions,
} from './checks';
import { getChunk, getPage, listChunks } from './chunks';
import type { KbTransport } from './transport';
import {
  listDocuments,
  uploadBlob,
  uploadBlobs,
  waitForDocuments,
  type ListDocumentsOptions,
  type UploadItem,
  type UploadOptions,
  type UploadSummary,
} from './documents';
import { PagedList, type PageOptions } from './paging';
import type * as T from './types';
import { createWebhook, deleteWebhook, getWebhook, listWebhookDeliveries, listWebhooks, retryWebhookDelivery, updateWebhook } from './webhooks';

/** Options of a call that takes no other option than its abort signal. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** `kb.organization`: the organization of the API key. */
export class OrganizationApi {
  constructor(private readonly kb: KbTransport) {}

  /** The organization of the key, `{ id, name }` (GET /api/v2/organization). @throws KbApiError 401. */
  async get(options: CallOptions = {}): Promise<T.Organization> {
    return await this.kb.data(this.kb.api.GET('/api/v2/organization', { signal: options.signal }));
  }
}

/** `kb.projects`: the organization's projects. */
export class ProjectsApi {
  constructor(private readonly kb: KbTransport) {}

  /**
   * The organization's projects, newest first (GET /api/v2/projects), as a {@link PagedList}:
   * `for await (const p of kb.projects.list({ limit: 50 }))` reads every page; `.firstPage()` one.
   */
  list(options: PageOptions = {}): PagedList<T.Project> {
    return new PagedList(
      async (offset, limit, signal) => await this.kb.page(this.kb.api.GET('/api/v2/projects', { params: { query: { limit, offset } }, signal })),
      options,
    );
  }

  /** One project (GET /api/v2/projects/{id}). @throws KbApiError 404 (unknown or another organization's). */
  async get(id: string, options: CallOptions = {}): Promise<T.Project> {
    return await this.kb.data(this.kb.api.GET('/api/v2/projects/{id}', { params: { path: { id } }, signal: options.signal }));
  }

  /** Creates a project (POST /api/v2/projects): `name` 1 to 200 characters, `description?`. @throws KbApiError 400. */
  async create(project: T.CreateProject, options: CallOptions = {}): Promise<T.Project> {
    return await this.kb.data(this.kb.api.POST('/api/v2/projects', { body: project, signal: options.signal }));
  }

  /** Changes a project's `name` and/or `description` (PATCH /api/v2/projects/{id}). @throws KbApiError 400, 404. */
  async update(id: string, changes: T.UpdateProject, options: CallOptions = {}): Promise<T.Project> {
    return await this.kb.data(this.kb.api.PATCH('/api/v2/projects/{id}', { params: { path: { id } }, body: changes, signal: options.signal }));
  }

  /** Deletes a project (DELETE /api/v2/projects/{id}, 204). @throws KbApiError 404, 409 (it still has documents). */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.kb.data(this.kb.api.DELETE('/api/v2/projects/{id}', { params: { path: { id } }, signal: options.signal }));
  }
}

/** `kb.documents`: documents, their uploads, chunks and pages. Uploads from paths and folders are Node's `uploadFile`/`uploadFiles`/`uploadDirectory`. */
export class DocumentsApi {
  constructor(private readonly kb: KbTransport) {}

  /** Documents, newest first, filtered by `projectId`, `status`, `current` (GET /api/v2/documents; {@link listDocuments}), as a {@link PagedList}. */
  list(options: ListDocumentsOptions = {}): PagedList<T.Document> {
    return new PagedList((offset, limit, signal) => listDocuments(this.kb, { ...options, offset, limit, signal }), options);
  }

  /** One document (GET /api/v2/documents/{id}). @throws KbApiError 404. */
  async get(id: string, options: CallOptions = {}): Promise<T.Document> {
    return await this.kb.data(this.kb.api.GET('/api/v2/documents/{id}', { params: { path: { id } }, signal: options.signal }));
  }

  /**
   * Reserves an upload slot (POST /api/v2/documents): the document, `awaiting_upload`, with its
   * presigned `upload` (`url`, `method`, `recommended_content_type`, `expires_at`). The upload
   * helpers ({@link upload}) do this, the PUT and the processing for you.
   * @throws KbApiError 400 (unsupported type…), 404 (unknown project), 409 (`replaces` already superseded), 413 (too large).
   */
  async reserve(reservation: T.ReserveDocument, options: CallOptions = {}): Promise<T.ReservedDocument> {
    return await this.kb.data(this.kb.api.POST('/api/v2/documents', { body: reservation, signal: options.signal }));
  }

  /** Starts processing uploaded documents, up to 100 ids (POST /api/v2/documents/process): `{ processed, skipped, failed }`. @throws KbApiError 400. */
  async process(documentIds: string[], options: CallOptions = {}): Promise<T.ProcessResult> {
    return await this.kb.data(this.kb.api.POST('/api/v2/documents/process', { body: { document_ids: documentIds }, signal: options.signal }));
  }

  /** Deletes documents, up to 100 ids (DELETE /api/v2/documents): `{ deleted }`. @throws KbApiError 400, 403 (another organization's). */
  async delete(documentIds: string[], options: CallOptions = {}): Promise<T.DeletedDocuments> {
    return await this.kb.data(this.kb.api.DELETE('/api/v2/documents', { body: { document_ids: documentIds }, signal: options.signal }));
  }

  /** A presigned address of the original file, valid about 10 minutes (GET /api/v2/documents/{id}/download). @throws KbApiError 404. */
  async download(id: string, options: CallOptions = {}): Promise<T.DownloadDescriptor> {
    return await this.kb.data(this.kb.api.GET('/api/v2/documents/{id}/download', { params: { path: { id } }, signal: options.signal }));
  }

  /** Uploads files held in memory (Files, Blobs, bytes): reserve, PUT, process, wait ({@link uploadBlobs}). */
  upload(items: UploadItem[], options: UploadOptions = {}): Promise<UploadSummary> {
    return uploadBlobs(this.kb, items, options);
  }

  /** Uploads one in-memory file and returns its document ({@link uploadBlob}; `replaces` for a new version). */
  uploadOne(item: UploadItem, options: UploadOptions = {}): Promise<T.Document> {
    return uploadBlob(this.kb, item, options);
  }

  /** Waits until each document is `completed` or `failed` ({@link waitForDocuments}). */
  wait(ids: string[], options: Parameters<typeof waitForDocuments>[2] = {}): Promise<T.Document[]> {
    return waitForDocuments(this.kb, ids, options);
  }

  /** A document's chunks in document order (GET /api/v2/documents/{id}/chunks; {@link listChunks}), as a {@link PagedList}. */
  chunks(id: string, options: PageOptions = {}): PagedList<T.DocumentChunk> {
    return new PagedList((offset, limit, signal) => listChunks(this.kb, id, { offset, limit, signal }), options);
  }

  /** The chunk behind a source's `node_id` or a citation's `chunk_id` ({@link getChunk}). */
  chunk(id: string, nodeId: string, options: CallOptions = {}): Promise<T.DocumentChunk> {
    return getChunk(this.kb, id, nodeId, options);
  }

  /** The size of page `n` (1-based) of a PDF in points ({@link getPage}). */
  page(id: string, n: number, options: CallOptions = {}): Promise<T.PageSize> {
    return getPage(this.kb, id, n, options);
  }
}

/** `kb.checks`: one requirement checked at once. */
export class ChecksApi {
  constructor(private readonly kb: KbTransport) {}

  /** The verdict on one requirement against a project's documents (POST /api/v2/check/verify; {@link verifyRequirement}). */
  verify(request: T.VerifyRequirement, options: CallOptions = {}): Promise<T.Verdict> {
    return verifyRequirement(this.kb, request, options);
  }
}

/** `kb.runs`: check runs, many requirements checked in the background. */
export class RunsApi {
  constructor(private readonly kb: KbTransport) {}

  /** Creates a run, `pending` ({@link createCheckRun}). */
  create(run: T.CreateCheckRun, options: CallOptions = {}): Promise<T.CheckRun> {
    return createCheckRun(this.kb, run, options);
  }

  /** Creates, triggers and waits for a run; requirements may be strings ({@link runCheck}). @returns its detail. */
  createAndWait(run: Parameters<typeof runCheck>[1], options: Parameters<typeof runCheck>[2] = {}): Promise<T.CheckRunDetail> {
    return runCheck(this.kb, run, options);
  }

  /** A run with every requirement ({@link getCheckRun}). */
  get(id: string, options: CallOptions = {}): Promise<T.CheckRunDetail> {
    return getCheckRun(this.kb, id, options);
  }

  /** The organization's runs (optionally one project's), newest first, without requirements ({@link listCheckRuns}), as a {@link PagedList}. */
  list(options: ListCheckRunsOptions = {}): PagedList<T.CheckRun> {
    return new PagedList((offset, limit, signal) => listCheckRuns(this.kb, { ...options, offset, limit, signal }), options);
  }

  /** Every requirement of a run, in order (not paginated by the API; {@link listCheckRunRequirements}). */
  requirements(id: string, options: CallOptions = {}): Promise<T.CheckRequirement[]> {
    return listCheckRunRequirements(this.kb, id, options);
  }

  /** Starts checking a run ({@link triggerCheckRun}). */
  trigger(id: string, trigger: T.TriggerCheckRun = {}, options: CallOptions = {}): Promise<T.TriggeredRun> {
    return triggerCheckRun(this.kb, id, trigger, options);
  }

  /** Stops a run being processed ({@link stopCheckRun}). */
  stop(id: string, options: CallOptions = {}): Promise<T.CheckRun> {
    return stopCheckRun(this.kb, id, options);
  }

  /** A new pending run with the same requirements ({@link rerunCheckRun}). */
  rerun(id: string, rerun: T.RerunCheckRun = {}, options: CallOptions = {}): Promise<T.CheckRun> {
    return rerunCheckRun(this.kb, id, rerun, options);
  }

  /** What changed between two runs: `id` before, `withId` after ({@link compareCheckRuns}). */
  compare(id: string, withId: string, options: CallOptions = {}): Promise<T.CheckRunComparison> {
    return compareCheckRuns(this.kb, id, withId, options);
  }

  /** The run's report as a file, XLSX (default), CSV or PDF ({@link downloadReport}). */
  report(id: string, format: ReportFormat = 'xlsx', options: CallOptions = {}): Promise<Uint8Array> {
    return downloadReport(this.kb, id, format, options);
  }

  /** Waits until the run is `completed`, `stopped` or `failed`, with light polls ({@link waitForCheckRun}). @returns its detail. */
  wait(id: string, options: WaitForCheckRunOptions = {}): Promise<T.CheckRunDetail> {
    return waitForCheckRun(this.kb, id, options);
  }
}

/** `kb.reviews`: a person's decision on a completed requirement of a run. */
export class ReviewsApi {
  constructor(private readonly kb: KbTransport) {}

  /** Records (or replaces) the review of a requirement ({@link setRequirementReview}). */
  set(runId: string, requirementId: string, review: T.ReviewRequirement, options: CallOptions = {}): Promise<T.CheckRequirement> {
    return setRequirementReview(this.kb, runId, requirementId, review, options);
  }

  /** Removes the review of a requirement; fine when it has none ({@link clearRequirementReview}). */
  clear(runId: string, requirementId: string, options: CallOptions = {}): Promise<void> {
    return clearRequirementReview(this.kb, runId, requirementId, options);
  }
}

/** `kb.agent`: answers with citations. */
export class AgentApi {
  constructor(private readonly kb: KbTransport) {}

  /** One question, one answer with citations (POST /api/v2/agent/query). @throws KbApiError 400, 403 AGENT_NOT_ENABLED, 404. */
  async query(request: T.QueryRequest, options: CallOptions = {}): Promise<T.Answer> {
    return await this.kb.data(this.kb.api.POST('/api/v2/agent/query', { body: request, signal: options.signal }));
  }

  /** A conversation's reply streamed as events: meta, delta…, citations, done (POST /api/v2/chat; {@link chat}). */
  chat(request: Parameters<typeof chat>[1], options: CallOptions = {}): ReturnType<typeof chat> {
    return chat(this.kb, request, options);
  }

  /** The streamed reply collected, `onDelta` called with each piece of text ({@link chatText}). */
  chatText(request: Parameters<typeof chatText>[1], onDelta?: (text: string) => void, options: CallOptions = {}): ReturnType<typeof chatText> {
    return chatText(this.kb, request, onDelta, options);
  }
}

/** `kb.batches`: many questions answered in the background. */
export class BatchesApi {
  constructor(private readonly kb: KbTransport) {}

  /** Creates a batch, `pending` ({@link createBatch}). */
  create(batch: T.CreateBatch, options: CallOptions = {}): Promise<T.Batch> {
    return createBatch(this.kb, batch, options);
  }

  /** A batch with its results ({@link getBatch}). */
  get(id: string, options: CallOptions = {}): Promise<T.BatchDetail> {
    return getBatch(this.kb, id, options);
  }

  /** The organization's batches, newest first, without results ({@link listBatches}), as a {@link PagedList}. */
  list(options: ListBatchesOptions = {}): PagedList<T.Batch> {
    return new PagedList((offset, limit, signal) => listBatches(this.kb, { ...options, offset, limit, signal }), options);
  }

  /** The batch's `results` in question order: `{ index, question, status, answer, citations, error }` (GET /api/v2/agent/batches/{id}). */
  async results(id: string, options: CallOptions = {}): Promise<T.BatchDetail['results']> {
    return (await getBatch(this.kb, id, options)).results;
  }

  /** The results as CSV, optionally after waiting (`wait: true`; {@link exportBatch}). */
  export(id: string, options: Parameters<typeof exportBatch>[2] = {}): Promise<string> {
    return exportBatch(this.kb, id, options);
  }

  /** Waits until the batch is `completed` or `failed`, with light polls ({@link waitForBatch}). @returns it with its results. */
  wait(id: string, options: WaitForBatchOptions = {}): Promise<T.BatchDetail> {
    return waitForBatch(this.kb, id, options);
  }
}

/** `kb.webhooks`: endpoints that receive the organization's events, and their delivery logs. */
export class WebhooksApi {
  constructor(private readonly kb: KbTransport) {}

  /** Registers an endpoint; the answer holds its `secret`, shown this once ({@link createWebhook}). */
  create(webhook: T.CreateWebhook, options: CallOptions = {}): Promise<T.CreatedWebhook> {
    return createWebhook(this.kb, webhook, options);
  }

  /** The organization's endpoints, newest first, without secrets ({@link listWebhooks}), as a {@link PagedList}. */
  list(options: PageOptions = {}): PagedList<T.WebhookEndpoint> {
    return new PagedList((offset, limit, signal) => listWebhooks(this.kb, { offset, limit, signal }), options);
  }

  /** One endpoint ({@link getWebhook}). */
  get(id: string, options: CallOptions = {}): Promise<T.WebhookEndpoint> {
    return getWebhook(this.kb, id, options);
  }

  /** Changes only the given fields ({@link updateWebhook}). */
  update(id: string, changes: T.UpdateWebhook, options: CallOptions = {}): Promise<T.WebhookEndpoint> {
    return updateWebhook(this.kb, id, changes, options);
  }

  /** Deletes an endpoint and its delivery log ({@link deleteWebhook}). */
  delete(id: string, options: CallOptions = {}): Promise<void> {
    return deleteWebhook(this.kb, id, options);
  }

  /** An endpoint's delivery log, newest first ({@link listWebhookDeliveries}), as a {@link PagedList}. */
  deliveries(id: string, options: PageOptions = {}): PagedList<T.WebhookDelivery> {
    return new PagedList((offset, limit, signal) => listWebhookDeliveries(this.kb, id, { offset, limit, signal }), options);
  }

  /** Sends a delivery again now ({@link retryWebhookDelivery}). */
  retryDelivery(id: string, deliveryId: string, options: CallOptions = {}): Promise<T.WebhookDelivery> {
    return retryWebhookDelivery(this.kb, id, deliveryId, options);
  }
}

/** `kb.audit`: the organization's audit log. */
export class AuditApi {
  constructor(private readonly kb: KbTransport) {}

  /** Audit events, newest first, filtered by resource, action and time ({@link listAuditEvents}), as a {@link PagedList}. */
  list(filter: AuditEventFilter = {}): PagedList<T.AuditEvent> {
    return new PagedList((offset, limit, signal) => listAuditEvents(this.kb, { ...filter, offset, limit, signal }), filter);
  }
}
