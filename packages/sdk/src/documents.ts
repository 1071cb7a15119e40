// Documents without Node built-ins (browsers, workers, Node): the upload flow shared by every kind
// of source (reserve → PUT to the presigned URL → process → wait), uploads of Blobs, Files and
// bytes, the document list and the wait. Uploads from paths (node:fs, node:http) are in files.ts.
import type { KbTransport } from './transport';
import { sleep } from './sleep';
import { CONTENT_TYPE_BY_EXTENSION, contentTypeFor } from './content-types';
import { KbApiError, KbTimeoutError } from './errors';
import type { Document } from './types';
import type { Page, PageOptions } from './paging';

/** Statuses after which a document does not change by itself. */
const FINAL = ['completed', 'failed'];

/** Progress of one file through an upload ({@link uploadBlobs}, `uploadFiles`). */
export interface UploadProgress {
  /** The file: its path as given (or found in a folder) for uploads from paths, its name for Blobs and Files. */
  file: string;
  /** Position of the file in the list given to the upload (0-based; tells apart two files of the same name). */
  index: number;
  /** `reserving` → `uploading` (bytes) → `processing` (the document's status and `progress`) → `done` | `failed`. */
  stage: 'reserving' | 'uploading' | 'processing' | 'done' | 'failed';
  /** Bytes the storage has received (back to 0 when the PUT is retried). */
  bytesSent: number;
  bytesTotal: number;
  /** The document, once reserved (then as last polled). */
  document?: Document;
  /** Why the file failed (stage `failed`). */
  error?: string;
}

/** Options of every upload helper ({@link uploadBlobs}, {@link uploadBlob}, `uploadFiles`, `uploadFile`, `uploadDirectory`). */
export interface UploadOptions {
  /** Project to upload into; omitted: organization-level documents. */
  projectId?: string;
  /**
   * Id of the document the file is the next version of (decisions.md "Document versions"): same
   * organization and same project (`projectId`, or none for both). Only with exactly one file. It
   * is superseded, and leaves the knowledge scope, when the new version becomes ready.
   */
  replaces?: string;
  /** Start processing after the upload (default true). */
  process?: boolean;
  /** Wait until every document is `completed` or `failed` (default true; implies `process`). */
  wait?: boolean;
  /** Files reserved and sent at the same time (default 3). */
  concurrency?: number;
  /** Called at each step of each file. */
  onProgress?: (progress: UploadProgress) => void;
  /** Give up waiting after this many ms (default 30 min, the service's own processing timeout). */
  timeoutMs?: number;
  /** Interval between status polls in ms (default 2000; one request per poll for all files). */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

/** Result of an upload of several files. */
export interface UploadSummary {
  /** Documents reserved and uploaded, in the order of the files (as last seen: `completed`, `failed`, …). */
  documents: Array<{ file: string; document: Document }>;
  /** Files that could not be uploaded or processed, with the reason (the document too when one was reserved). */
  failed: Array<{ file: string; error: string; document?: Document }>;
  /** Files left out of a folder upload: their type is not one the service accepts. */
  skipped: Array<{ file: string; reason: string }>;
}

/** Where and how to PUT a file's bytes: the reservation's presigned `upload` (no bearer header: the URL carries its own authorization). */
export interface UploadTarget {
  url: string;
  method: string;
  /** The `Content-Type` to send (the reservation's `recommended_content_type`). */
  contentType: string;
}

/** One file for {@link uploadSources}: how it is named and sized, and how its bytes are sent. */
export interface UploadSource {
  /** The file as the caller knows it (path or name): `file` of progress and summary. */
  file: string;
  /** The file name given to the service (its extension gives the content type). */
  name: string;
  size: number;
  /**
   * Sends the bytes to `target`, calling `onBytes` with the bytes sent so far.
   * @throws UploadPutError when the storage refuses them or cannot be reached (retried by status, see {@link putWithRetries}).
   */
  put(target: UploadTarget, onBytes: (sent: number) => void, signal?: AbortSignal): Promise<void>;
}

/** The PUT of a file's bytes failed: `status` is the storage's answer, null when there was none (network error). */
export class UploadPutError extends Error {
  override readonly name: string = 'UploadPutError';
  constructor(
    message: string,
    readonly status: number | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Retries of a PUT to the storage after a network error, 408, 429 or 5xx (after a random wait in [0, 0.5 s × 2^attempt)). */
const PUT_RETRIES = 2;

/**
 * `source.put` with {@link PUT_RETRIES} retries on a network error or a 408, 429 or 5xx answer of
 * the storage (a presigned PUT is idempotent: the same bytes to the same key). `onBytes(0)` before
 * a retry. Other errors, and the caller's abort, are thrown at once.
 */
export async function putWithRetries(source: UploadSource, target: UploadTarget, onBytes: (sent: number) => void, signal?: AbortSignal): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await source.put(target, onBytes, signal);
      return;
    } catch (error) {
      const retryable = error instanceof UploadPutError && (error.status === null || error.status >= 500 || error.status === 408 || error.status === 429);
      if (signal?.aborted || !retryable || attempt >= PUT_RETRIES) throw error;
      onBytes(0);
      await sleep(Math.random() * 500 * 2 ** attempt, signal);
    }
  }
}

/**
 * The upload flow every upload helper shares: for each source (`concurrency` at a time) reserves a
 * slot (POST /api/v2/documents with `content_type` from the name), PUTs the bytes to the presigned
 * URL ({@link putWithRetries}), then starts processing (POST /api/v2/documents/process, up to 100
 * ids per call) and waits for the documents ({@link waitForDocuments}).
 * A file the service refuses (unsupported type, too large) or whose processing fails is reported
 * in `failed`; other errors (authentication, network, the storage's refusal) are thrown.
 * @throws KbApiError on errors that concern the whole call (401, 402, 404 project…; with
 *   `replaces`: 404 when it is not a document of the organization and project, 409 CONFLICT when it
 *   is already superseded or being replaced by a version still processing).
 * @throws UploadPutError when the storage refuses the bytes, or cannot be reached, after the retries.
 * @throws KbTimeoutError when `wait` exceeds `timeoutMs`.
 * @throws TypeError when `replaces` is given with more than one source.
 */
export async function uploadSources(kb: KbTransport, sources: UploadSource[], options: UploadOptions = {}): Promise<UploadSummary> {
  if (options.replaces !== undefined && sources.length !== 1) throw new TypeError(`replaces applies to exactly one file (${sources.length} given).`);
  const summary: UploadSummary = { documents: [], failed: [], skipped: [] };
  const progress: UploadProgress[] = sources.map((s, index) => ({ file: s.file, index, stage: 'reserving', bytesSent: 0, bytesTotal: s.size }));
  const report = (index: number, change: Partial<UploadProgress>) => {
    progress[index] = { ...progress[index], ...change };
    options.onProgress?.(progress[index]);
  };
  const fail = (index: number, error: string, document?: Document) => {
    report(index, { stage: 'failed', error, ...(document ? { document } : {}) });
    summary.failed.push({ file: sources[index].file, error, ...(document ? { document } : {}) });
  };
  const reserved = new Array<{ index: number; document: Document } | undefined>(sources.length);
  let cursor = 0;
  const worker = async () => {
    while (cursor < sources.length) {
      const index = cursor++;
      const source = sources[index];
      report(index, {});
      const contentType = contentTypeFor(source.name);
      if (!contentType) {
        fail(index, `unsupported file type (the service takes ${[...new Set(Object.keys(CONTENT_TYPE_BY_EXTENSION))].join(' ')})`);
        continue;
      }
      try {
        const reservation = await kb.data(
          kb.api.POST('/api/v2/documents', {
            body: {
              file_name: source.name,
              content_type: contentType,
              size_bytes: source.size,
              ...(options.projectId ? { project_id: options.projectId } : {}),
              ...(options.replaces ? { replaces: options.replaces } : {}),
            },
            signal: options.signal,
          }),
        );
        const document = reservation as Document;
        report(index, { stage: 'uploading', document });
        const { upload } = reservation;
        const target = { url: upload.url, method: upload.method, contentType: upload.recommended_content_type };
        await putWithRetries(source, target, (sent) => report(index, { bytesSent: sent }), options.signal);
        reserved[index] = { index, document };
      } catch (error) {
        if (error instanceof KbApiError && [400, 413].includes(error.status)) fail(index, error.message);
        else throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 3, sources.length) }, worker));
  const uploaded = reserved.filter((r): r is { index: number; document: Document } => r !== undefined);
  const entry = (r: { index: number; document: Document }) => ({ file: sources[r.index].file, document: r.document });
  if (options.process === false && options.wait !== true) {
    for (const r of uploaded) report(r.index, { stage: 'done' });
    summary.documents.push(...uploaded.map(entry));
    return summary;
  }
  const started: typeof uploaded = [];
  for (let i = 0; i < uploaded.length; i += 100) {
    const slice = uploaded.slice(i, i + 100);
    const result = await kb.data(kb.api.POST('/api/v2/documents/process', { body: { document_ids: slice.map((r) => r.document.id) }, signal: options.signal }));
    for (const r of slice) {
      const skipped = result.skipped.find((s) => s.document_id === r.document.id);
      const failed = result.failed.find((f) => f.document_id === r.document.id);
      if (skipped || failed) {
        fail(r.index, skipped ? `not processed: ${skipped.reason}` : `${failed!.error}: ${failed!.message}`, r.document);
      } else {
        report(r.index, { stage: 'processing', document: { ...r.document, status: 'processing' } });
        started.push(r);
      }
    }
  }
  if (options.wait === false) {
    summary.documents.push(...started.map(entry));
    return summary;
  }
  const byId = new Map(started.map((r) => [r.document.id, r.index]));
  const finals = await waitForDocuments(kb, [...byId.keys()], {
    timeoutMs: options.timeoutMs,
    pollIntervalMs: options.pollIntervalMs,
    signal: options.signal,
    onProgress: (document) => {
      const index = byId.get(document.id)!;
      if (document.status === 'failed') report(index, { stage: 'failed', document, error: document.error_message ?? 'processing failed' });
      else report(index, { stage: FINAL.includes(document.status) ? 'done' : 'processing', document });
    },
  });
  for (const document of finals) {
    const file = sources[byId.get(document.id)!].file;
    if (document.status === 'failed') summary.failed.push({ file, error: document.error_message ?? 'processing failed', document });
    else summary.documents.push({ file, document });
  }
  return summary;
}

/**
 * The one document of a one-file upload's summary.
 * @throws KbApiError when the file was refused (`VALIDATION_ERROR`, 400) or its processing failed
 *   (`PROCESSING_FAILED` with the document's error message: an SDK code, status 200).
 */
export function onlyDocument(summary: UploadSummary, name: string): Document {
  if (summary.documents.length === 1) return summary.documents[0].document;
  const failure = summary.failed[0];
  throw KbApiError.of(failure.document ? 200 : 400, failure.document ? 'PROCESSING_FAILED' : 'VALIDATION_ERROR', `${name}: ${failure.error}`, null);
}

/** A file to upload from memory: a `File` (its own name), or a name with the bytes (a Blob, an ArrayBuffer, a Uint8Array or Node Buffer…). */
export type UploadItem = File | { name: string; data: Blob | ArrayBuffer | ArrayBufferView };

/**
 * Uploads files held in memory (a browser's `File`s from an `<input type="file">` or a drop, Blobs,
 * bytes): the flow of {@link uploadSources} (reserve with the content type of the name's extension,
 * PUT, process, wait; `replaces` for a new version of one document). The PUT reports byte progress
 * through XMLHttpRequest's upload events where XMLHttpRequest exists (browsers); elsewhere (Node,
 * workers) it is a fetch, with progress only at its start and end. It is retried twice on a network
 * error or a 408, 429 or 5xx of the storage.
 * @returns the summary as `uploadFiles`': `file` is each item's name.
 * @throws TypeError for an item that is neither a File nor `{ name, data }`; otherwise as {@link uploadSources}.
 */
export async function uploadBlobs(kb: KbTransport, items: UploadItem[], options: UploadOptions = {}): Promise<UploadSummary> {
  return uploadSources(kb, items.map(itemSource), options);
}

/**
 * Uploads one in-memory file (see {@link uploadBlobs}) and returns its document (`completed` when waited for).
 * @throws KbApiError when the service refuses the file, or its processing fails (code `PROCESSING_FAILED` with the document's error message).
 */
export async function uploadBlob(kb: KbTransport, item: UploadItem, options: UploadOptions = {}): Promise<Document> {
  const source = itemSource(item, 0);
  return onlyDocument(await uploadSources(kb, [source], options), source.name);
}

/**
 * The upload source of an in-memory item (`index`: its position, for the error message): the
 * File's name or the given one, the bytes as a Blob, and {@link putBlob} as its PUT.
 * @throws TypeError for an item that is neither a File nor `{ name, data }`, or has no name.
 */
export function itemSource(item: UploadItem, index: number): UploadSource {
  let name: unknown;
  let blob: Blob;
  if (typeof Blob !== 'undefined' && item instanceof Blob) {
    name = (item as { name?: unknown }).name;
    blob = item;
  } else if (item && typeof item === 'object' && 'data' in item) {
    name = item.name;
    const data = item.data;
    if (typeof Blob !== 'undefined' && data instanceof Blob) blob = data;
    else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) blob = new Blob([data as ArrayBuffer]);
    else throw new TypeError(`Item ${index}: data must be a Blob, an ArrayBuffer or a typed array (a Uint8Array, a Buffer).`);
  } else {
    throw new TypeError(`Item ${index}: expected a File, or { name, data } with a Blob, an ArrayBuffer or a Uint8Array.`);
  }
  if (typeof name !== 'string' || name === '') throw new TypeError(`Item ${index}: a file name is needed (a File, or { name, data }); a bare Blob has none.`);
  return { file: name, name, size: blob.size, put: (target, onBytes, signal) => putBlob(name, blob, target, onBytes, signal) };
}

/** What {@link putBlob} uses of a browser's XMLHttpRequest (typed here: the package compiles without the DOM library too). */
interface UploadXhr {
  open(method: string, url: string): void;
  setRequestHeader(name: string, value: string): void;
  send(body: Blob): void;
  abort(): void;
  readonly status: number;
  readonly responseText: string;
  readonly upload: { onprogress: ((event: { loaded: number }) => void) | null };
  onload: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}

/**
 * PUTs a Blob to the storage: with XMLHttpRequest (upload progress events) where it exists, else
 * with fetch (progress 0 at the start, the size at the end). `Content-Length` is the Blob's size.
 * @throws UploadPutError with the storage's status and body, or status null on a network error.
 */
function putBlob(name: string, blob: Blob, target: UploadTarget, onBytes: (sent: number) => void, signal?: AbortSignal): Promise<void> {
  const refused = (status: number, body: string) => new UploadPutError(`Upload of ${name} refused by storage: ${status} ${body.slice(0, 300)}`, status);
  const Xhr = (globalThis as { XMLHttpRequest?: new () => UploadXhr }).XMLHttpRequest;
  if (Xhr) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const xhr = new Xhr();
      const onAbort = () => xhr.abort();
      const done = () => signal?.removeEventListener('abort', onAbort);
      xhr.open(target.method, target.url);
      xhr.setRequestHeader('Content-Type', target.contentType);
      xhr.upload.onprogress = (event) => onBytes(Math.min(event.loaded, blob.size));
      xhr.onload = () => {
        done();
        if (xhr.status >= 200 && xhr.status < 300) {
          onBytes(blob.size);
          resolve();
        } else reject(refused(xhr.status, String(xhr.responseText ?? '')));
      };
      xhr.onerror = () => (
        done(),
        reject(new UploadPutError(`Upload of ${name} failed: the storage at ${new URL(target.url).origin} could not be reached`, null))
      );
      xhr.onabort = () => (done(), reject(signal?.reason ?? new DOMException('The upload was aborted.', 'AbortError')));
      signal?.addEventListener('abort', onAbort, { once: true });
      onBytes(0);
      xhr.send(blob);
    });
  }
  return (async () => {
    onBytes(0);
    let response: Response;
    try {
      response = await fetch(target.url, { method: target.method, headers: { 'Content-Type': target.contentType }, body: blob, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new UploadPutError(`Upload of ${name} failed: ${cause?.code ?? cause?.message ?? (error as Error).message}`, null, { cause: error });
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) throw refused(response.status, text);
    onBytes(blob.size);
  })();
}

/** Filters and paging of {@link listDocuments}. */
export interface ListDocumentsOptions extends PageOptions {
  projectId?: string;
  status?: Document['status'];
  /** true: only documents not superseded by a newer version (`superseded_by` null); default: all. */
  current?: boolean;
}

/**
 * Documents of the organization, newest first (GET /api/v2/documents), each with its `version`,
 * `replaces` and `superseded_by`.
 * @throws KbApiError 400 for a bad filter.
 */
export async function listDocuments(kb: KbTransport, options: ListDocumentsOptions = {}): Promise<Page<Document>> {
  const query = { project_id: options.projectId, status: options.status, current: options.current, limit: options.limit, offset: options.offset };
  return await kb.page(kb.api.GET('/api/v2/documents', { params: { query }, signal: options.signal }));
}

/**
 * Polls documents (GET /api/v2/documents?document_ids=…, one request per 100 ids per poll) until
 * each is `completed` or `failed` (or, with `until: 'ready'`, searchable: `ready` too).
 * `onProgress` is called with each document whose status or progress changed. A poll costs one
 * request per 100 documents, however many are waited for.
 * @returns the documents in the order of `ids`.
 * @throws KbTimeoutError after `timeoutMs` (default 30 min); KbNotFoundError when a document is not found.
 */
export async function waitForDocuments(
  kb: KbTransport,
  ids: string[],
  options: { until?: 'ready' | 'completed'; timeoutMs?: number; pollIntervalMs?: number; onProgress?: (document: Document) => void; signal?: AbortSignal } = {},
): Promise<Document[]> {
  const done = options.until === 'ready' ? ['ready', ...FINAL] : FINAL;
  const deadline = Date.now() + (options.timeoutMs ?? 30 * 60_000);
  const latest = new Map<string, Document>();
  const seen = new Map<string, string>();
  for (;;) {
    const pending = ids.filter((id) => !done.includes(latest.get(id)?.status ?? ''));
    if (pending.length === 0) return ids.map((id) => latest.get(id)!);
    for (let i = 0; i < pending.length; i += 100) {
      const slice = pending.slice(i, i + 100);
      const page = await kb.page(kb.api.GET('/api/v2/documents', { params: { query: { document_ids: slice.join(','), limit: 200 } }, signal: options.signal }));
      for (const document of page.data as Document[]) {
        latest.set(document.id, document);
        const fingerprint = JSON.stringify([document.status, (document as { progress?: unknown }).progress ?? null]);
        if (seen.get(document.id) !== fingerprint) {
          seen.set(document.id, fingerprint);
          options.onProgress?.(document);
        }
      }
      const missing = slice.find((id) => !latest.has(id));
      if (missing) throw KbApiError.of(404, 'NOT_FOUND', `Document ${missing} not found.`, null);
    }
    if (ids.every((id) => done.includes(latest.get(id)!.status))) return ids.map((id) => latest.get(id)!);
    if (Date.now() > deadline) throw new KbTimeoutError(`Documents still processing after ${options.timeoutMs ?? 30 * 60_000} ms: ${pending.join(', ')}`);
    await sleep(options.pollIntervalMs ?? 2000, options.signal);
  }
}
