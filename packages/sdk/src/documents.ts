import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { KbClient } from './client';
import { CONTENT_TYPE_BY_EXTENSION, contentTypeFor } from './content-types';
import { KbApiError, KbTimeoutError } from './errors';
import type { Document } from './types';
import type { Page, PageOptions } from './webhooks';

/** Statuses after which a document does not change by itself. */
const FINAL = ['completed', 'failed'];

/** Progress of one file through {@link uploadFiles}. */
export interface UploadProgress {
  /** The file's path as given (or found in a folder). */
  file: string;
  /** `reserving` → `uploading` (bytes) → `processing` (the document's status and `progress`) → `done` | `failed`. */
  stage: 'reserving' | 'uploading' | 'processing' | 'done' | 'failed';
  bytesSent: number;
  bytesTotal: number;
  /** The document, once reserved (then as last polled). */
  document?: Document;
  /** Why the file failed (stage `failed`). */
  error?: string;
}

/** Options of {@link uploadFiles}, {@link uploadFile} and {@link uploadDirectory}. */
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

/**
 * Uploads files: for each, reserves a slot (POST /api/v2/documents), PUTs the bytes to the
 * presigned URL (no bearer header, Content-Type as recommended, byte progress), then starts
 * processing (POST /api/v2/documents/process, up to 100 ids per call) and waits for the
 * documents (see {@link waitForDocuments}).
 * A file the service refuses (unsupported type, too large) or whose processing fails is reported
 * in `failed`; other errors (authentication, network) are thrown.
 * @throws KbApiError on errors that concern the whole call (401, 402, 404 project…; with
 *   `replaces`: 404 when it is not a document of the organization and project, 409 CONFLICT when it
 *   is already superseded or being replaced by a version still processing).
 * @throws KbTimeoutError when `wait` exceeds `timeoutMs`.
 * @throws TypeError when `replaces` is given with more than one file.
 */
export async function uploadFiles(kb: KbClient, files: string[], options: UploadOptions = {}): Promise<UploadSummary> {
  if (options.replaces !== undefined && files.length !== 1) throw new TypeError(`replaces applies to exactly one file (${files.length} given).`);
  const summary: UploadSummary = { documents: [], failed: [], skipped: [] };
  const progress = new Map<string, UploadProgress>();
  const report = (file: string, change: Partial<UploadProgress>) => {
    const next = { ...progress.get(file)!, ...change };
    progress.set(file, next);
    options.onProgress?.(next);
  };
  const reserved: Array<{ file: string; document: Document } | undefined> = new Array(files.length);
  let cursor = 0;
  const worker = async () => {
    while (cursor < files.length) {
      const index = cursor++;
      const file = files[index];
      const size = (await stat(file)).size;
      progress.set(file, { file, stage: 'reserving', bytesSent: 0, bytesTotal: size });
      options.onProgress?.(progress.get(file)!);
      const fileName = path.basename(file);
      const contentType = contentTypeFor(fileName);
      if (!contentType) {
        const error = `unsupported file type (the service takes ${[...new Set(Object.keys(CONTENT_TYPE_BY_EXTENSION))].join(' ')})`;
        report(file, { stage: 'failed', error });
        summary.failed.push({ file, error });
        continue;
      }
      try {
        const document = await kb.data(
          kb.api.POST('/api/v2/documents', {
            body: {
              file_name: fileName,
              content_type: contentType,
              size_bytes: size,
              ...(options.projectId ? { project_id: options.projectId } : {}),
              ...(options.replaces ? { replaces: options.replaces } : {}),
            },
            signal: options.signal,
          }),
        );
        report(file, { stage: 'uploading', document: document as Document });
        await putFile(document.upload.url, document.upload.method, document.upload.recommended_content_type, file, size, (sent) => report(file, { bytesSent: sent }), options.signal);
        reserved[index] = { file, document: document as Document };
      } catch (error) {
        if (error instanceof KbApiError && [400, 413].includes(error.status)) {
          report(file, { stage: 'failed', error: error.message });
          summary.failed.push({ file, error: error.message });
        } else throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 3, files.length) }, worker));
  const uploaded = reserved.filter((r): r is { file: string; document: Document } => r !== undefined);
  if (options.process === false && options.wait !== true) {
    for (const r of uploaded) report(r.file, { stage: 'done' });
    summary.documents.push(...uploaded);
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
        const error = skipped ? `not processed: ${skipped.reason}` : `${failed!.error}: ${failed!.message}`;
        report(r.file, { stage: 'failed', error });
        summary.failed.push({ file: r.file, error, document: r.document });
      } else {
        report(r.file, { stage: 'processing', document: { ...r.document, status: 'processing' } });
        started.push(r);
      }
    }
  }
  if (options.wait === false) {
    summary.documents.push(...started);
    return summary;
  }
  const byId = new Map(started.map((r) => [r.document.id, r.file]));
  const finals = await waitForDocuments(kb, [...byId.keys()], {
    timeoutMs: options.timeoutMs,
    pollIntervalMs: options.pollIntervalMs,
    signal: options.signal,
    onProgress: (document) => {
      const file = byId.get(document.id)!;
      if (document.status === 'failed') report(file, { stage: 'failed', document, error: document.error_message ?? 'processing failed' });
      else report(file, { stage: FINAL.includes(document.status) ? 'done' : 'processing', document });
    },
  });
  for (const document of finals) {
    const file = byId.get(document.id)!;
    if (document.status === 'failed') summary.failed.push({ file, error: document.error_message ?? 'processing failed', document });
    else summary.documents.push({ file, document });
  }
  return summary;
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
export async function listDocuments(kb: KbClient, options: ListDocumentsOptions = {}): Promise<Page<Document>> {
  const query = { project_id: options.projectId, status: options.status, current: options.current, limit: options.limit, offset: options.offset };
  return (await kb.page(kb.api.GET('/api/v2/documents', { params: { query }, signal: options.signal }))) as Page<Document>;
}

/**
 * Uploads one file (see {@link uploadFiles}) and returns its document (`completed` when waited for).
 * @throws KbApiError when the service refuses the file, or its processing fails (code `PROCESSING_FAILED` with the document's error message).
 */
export async function uploadFile(kb: KbClient, file: string, options: UploadOptions = {}): Promise<Document> {
  const summary = await uploadFiles(kb, [file], options);
  if (summary.documents.length === 1) return summary.documents[0].document;
  const failure = summary.failed[0];
  throw new KbApiError(failure.document ? 200 : 400, failure.document ? 'PROCESSING_FAILED' : 'VALIDATION_ERROR', `${path.basename(file)}: ${failure.error}`, null);
}

/**
 * Uploads every file of a folder (and its subfolders unless `recursive` is false) whose type the
 * service accepts; other files are listed in `skipped`. Hidden files are left out.
 */
export async function uploadDirectory(kb: KbClient, directory: string, options: UploadOptions & { recursive?: boolean } = {}): Promise<UploadSummary> {
  const { files, skipped } = await filesOf([directory], options.recursive ?? true);
  const summary = await uploadFiles(kb, files, options);
  summary.skipped.push(...skipped);
  return summary;
}

/**
 * The files of `paths` (files as given; folders walked, sorted by name), split into those the
 * service accepts and the rest (`skipped`, with the reason).
 */
export async function filesOf(paths: string[], recursive = true): Promise<{ files: string[]; skipped: Array<{ file: string; reason: string }> }> {
  const files: string[] = [];
  const skipped: Array<{ file: string; reason: string }> = [];
  const walk = async (dir: string) => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (recursive) await walk(full);
      } else if (entry.isFile()) {
        if (contentTypeFor(entry.name)) files.push(full);
        else skipped.push({ file: full, reason: 'unsupported file type' });
      }
    }
  };
  for (const p of paths) {
    if ((await stat(p)).isDirectory()) await walk(p);
    else files.push(p);
  }
  return { files, skipped };
}

/**
 * Polls documents (GET /api/v2/documents?document_ids=…, one request per 100 ids per poll) until
 * each is `completed` or `failed` (or, with `until: 'ready'`, searchable: `ready` too).
 * `onProgress` is called with each document whose status or progress changed.
 * @returns the documents in the order of `ids`.
 * @throws KbTimeoutError after `timeoutMs` (default 30 min); KbApiError when a document is not found.
 */
export async function waitForDocuments(
  kb: KbClient,
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
      const page = await kb.page(
        kb.api.GET('/api/v2/documents', { params: { query: { document_ids: slice.join(','), limit: 200 } }, signal: options.signal }),
      );
      for (const document of page.data as Document[]) {
        latest.set(document.id, document);
        const fingerprint = JSON.stringify([document.status, (document as { progress?: unknown }).progress ?? null]);
        if (seen.get(document.id) !== fingerprint) {
          seen.set(document.id, fingerprint);
          options.onProgress?.(document);
        }
      }
      const missing = slice.find((id) => !latest.has(id));
      if (missing) throw new KbApiError(404, 'NOT_FOUND', `Document ${missing} not found.`, null);
    }
    if (ids.every((id) => done.includes(latest.get(id)!.status))) return ids.map((id) => latest.get(id)!);
    if (Date.now() > deadline) throw new KbTimeoutError(`Documents still processing after ${options.timeoutMs ?? 30 * 60_000} ms: ${pending.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 2000));
  }
}

/**
 * Streams a file to a presigned URL with `Content-Length` (S3 refuses chunked uploads), reporting
 * bytes sent. No bearer header: the URL carries its own authorization.
 * @throws Error with the storage's status and body when it does not answer 2xx.
 */
function putFile(url: string, method: string, contentType: string, file: string, size: number, onBytes: (sent: number) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = (target.protocol === 'https:' ? https : http).request(
      target,
      { method, headers: { 'Content-Type': contentType, 'Content-Length': String(size) }, signal },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => {
          if ((response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 300) resolve();
          else reject(new Error(`Upload of ${path.basename(file)} refused by storage: ${response.statusCode} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`));
        });
      },
    );
    request.on('error', reject);
    let sent = 0;
    const stream = createReadStream(file);
    stream.on('data', (chunk) => {
      sent += chunk.length;
      onBytes(sent);
    });
    stream.on('error', (e) => request.destroy(e));
    stream.pipe(request);
  });
}
