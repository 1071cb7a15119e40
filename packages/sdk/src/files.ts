// Uploads from paths (Node only: node:fs, node:http). The flow itself (reserve → PUT → process →
// wait) is documents.ts' uploadSources, shared with the uploads of Blobs and Files; this module
// adds what a path needs: its size from the file system, folders walked, and a streamed PUT.
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { KbTransport } from './transport';
import { contentTypeFor } from './content-types';
import { onlyDocument, UploadPutError, uploadSources, type UploadOptions, type UploadSource, type UploadSummary, type UploadTarget } from './documents';
import type { Document } from './types';

/**
 * Uploads files from paths: for each, reserves a slot (POST /api/v2/documents), PUTs the bytes to
 * the presigned URL (streamed from disk, `Content-Length`, no bearer header, byte progress; retried
 * twice on a network error or a 408, 429 or 5xx of the storage), then starts processing
 * (POST /api/v2/documents/process, up to 100 ids per call) and waits for the documents (see
 * `waitForDocuments`). The flow is `uploadSources`', shared with `uploadBlobs`.
 * A file the service refuses (unsupported type, too large) or whose processing fails is reported
 * in `failed`; other errors (authentication, network) are thrown.
 * @throws KbApiError on errors that concern the whole call (401, 402, 404 project…; with
 *   `replaces`: 404 when it is not a document of the organization and project, 409 CONFLICT when it
 *   is already superseded or being replaced by a version still processing).
 * @throws Error (ENOENT…) when a path cannot be read, before anything is uploaded.
 * @throws KbTimeoutError when `wait` exceeds `timeoutMs`.
 * @throws TypeError when `replaces` is given with more than one file.
 */
export async function uploadFiles(kb: KbTransport, files: string[], options: UploadOptions = {}): Promise<UploadSummary> {
  if (options.replaces !== undefined && files.length !== 1) throw new TypeError(`replaces applies to exactly one file (${files.length} given).`);
  return uploadSources(kb, await Promise.all(files.map(fileSource)), options);
}

/**
 * The upload source of a path: its base name, its size now, and a PUT streamed from disk.
 * @throws Error (ENOENT…) when the file cannot be stat'ed.
 */
export async function fileSource(file: string): Promise<UploadSource> {
  const size = (await stat(file)).size;
  return { file, name: path.basename(file), size, put: (target, onBytes, signal) => putFile(target, file, size, onBytes, signal) };
}

/**
 * Uploads one file (see {@link uploadFiles}) and returns its document (`completed` when waited for).
 * @throws KbApiError when the service refuses the file, or its processing fails (code `PROCESSING_FAILED` with the document's error message).
 */
export async function uploadFile(kb: KbTransport, file: string, options: UploadOptions = {}): Promise<Document> {
  return onlyDocument(await uploadFiles(kb, [file], options), path.basename(file));
}

/**
 * Uploads every file of a folder (and its subfolders unless `recursive` is false) whose type the
 * service accepts; other files are listed in `skipped`. Hidden files are left out.
 */
export async function uploadDirectory(kb: KbTransport, directory: string, options: UploadOptions & { recursive?: boolean } = {}): Promise<UploadSummary> {
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
 * Streams a file to a presigned URL with `Content-Length` (S3 refuses chunked uploads), reporting
 * bytes sent. No bearer header: the URL carries its own authorization.
 * @throws UploadPutError with the storage's status and body when it does not answer 2xx, or status
 *   null when it cannot be reached; the read stream's error (ENOENT…) when the file cannot be read.
 */
function putFile(target: UploadTarget, file: string, size: number, onBytes: (sent: number) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = new URL(target.url);
    let readError: Error | undefined;
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      { method: target.method, headers: { 'Content-Type': target.contentType, 'Content-Length': String(size) }, signal },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('error', (e) => reject(new UploadPutError(`Upload of ${path.basename(file)} failed: ${e.message}`, null, { cause: e })));
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve();
          else
            reject(
              new UploadPutError(
                `Upload of ${path.basename(file)} refused by storage: ${status} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`,
                status,
              ),
            );
        });
      },
    );
    request.on('error', (e: Error & { code?: string }) => {
      if (readError) reject(readError);
      else if (signal?.aborted) reject(signal.reason ?? e);
      else reject(new UploadPutError(`Upload of ${path.basename(file)} failed: ${e.code ?? e.message}`, null, { cause: e }));
    });
    onBytes(0);
    let sent = 0;
    const stream = createReadStream(file);
    stream.on('data', (chunk) => {
      sent += chunk.length;
      onBytes(sent);
    });
    stream.on('error', (e) => {
      readError = e;
      request.destroy(e);
    });
    stream.pipe(request);
  });
}
