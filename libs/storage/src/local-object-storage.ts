import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { StorageError } from './errors';
import { assertExpiry, assertHeaderText, assertValidKey, contentDisposition, normalizeContentType, TEMP_PREFIX } from './keys';
import type { ObjectInfo, ObjectStorage, PresignedUrl, PresignGetOptions, PresignPutOptions } from './types';

/** Configuration of {@link LocalObjectStorage}. */
export interface LocalStorageConfig {
  /** Directory holding the objects (`<rootDir>/objects/<key>`) and their metadata (`<rootDir>/meta/<key>.json`). */
  rootDir: string;
  /** Origin clients reach the gateway on, e.g. `http://localhost:8080` (a path is allowed, no trailing `/` needed). */
  publicBaseUrl: string;
  /** HMAC-SHA256 key for presigned URLs; at least 16 characters. Every gateway replica needs the same one. */
  signingSecret: string;
  /** Largest accepted upload in bytes; a larger PUT is answered 413 and nothing is stored. */
  maxUploadBytes: number;
  /** Path the gateway mounts {@link createLocalStorageHandler} on; default `/storage/v1`. */
  pathPrefix?: string;
  /**
   * Browser origins allowed to use presigned URLs cross-origin (CORS), e.g.
   * `['https://app.example']`; `['*']` (the default) allows any origin, `[]` none. The URLs carry
   * their own authorization and no cookies are involved, so any origin is safe by default.
   */
  corsOrigins?: string[];
}

/** Query parameters of local presigned URLs. All are covered by the signature. */
export const LOCAL_QUERY = {
  method: 'X-Kb-Method',
  expires: 'X-Kb-Expires',
  contentType: 'X-Kb-Content-Type',
  fileName: 'X-Kb-File-Name',
  contentLength: 'X-Kb-Content-Length',
  signature: 'X-Kb-Signature',
} as const;

const SIGNATURE_VERSION = 'KB-STORAGE-V1';
const DEFAULT_PATH_PREFIX = '/storage/v1';
const FALLBACK_CONTENT_TYPE = 'application/octet-stream';

interface Sidecar {
  size: number;
  contentType: string | null;
  etag: string;
  uploadedAt: string;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

class UploadTooLarge extends Error {}
class ClientGone extends Error {}

/**
 * Object storage on the local filesystem, for one machine (`npm start`) and tests.
 *
 * Layout: bytes in `<rootDir>/objects/<key>`, metadata sidecar (size, normalised content type,
 * ETag, upload time) in `<rootDir>/meta/<key>.json`. In-progress uploads are `.kb-tmp-*` files
 * in the object's directory, renamed into place when complete, so a reader sees the whole old
 * object or the whole new one, never a partial file.
 *
 * Presigned URLs have the shape
 * `<publicBaseUrl><pathPrefix>/<key, each segment percent-encoded>?X-Kb-Method=PUT|GET
 * &X-Kb-Expires=<unix seconds>[&X-Kb-Content-Type=…][&X-Kb-File-Name=…]&X-Kb-Signature=<hex>`,
 * the signature being HMAC-SHA256(signingSecret, "KB-STORAGE-V1\nmethod\nkey\nexpires\ncontentType\nfileName")
 * (empty strings for absent fields). They are served by {@link createLocalStorageHandler}.
 *
 * Content type policy (same as the `s3` driver): the PUT URL signs the content type the client
 * was told to send, but the upload is accepted with any Content-Type, and the type actually sent
 * (normalised; `application/octet-stream` when absent) is what `stat` reports. The documents
 * service compares it with the declared type (`content_type_mismatch`). Rationale: S3 presigned
 * PUTs from the `minio` client do not bind Content-Type, and both drivers must behave alike.
 *
 * Limitations: concurrent PUTs of one key are last-writer-wins for the bytes, and the sidecar
 * may briefly belong to the other writer; a key cannot be both an object and a "directory"
 * prefix of another key (the PUT answers 409 KeyConflict); a crash mid-upload leaves a
 * `.kb-tmp-*` file behind (never visible as an object).
 *
 * @throws StorageError INVALID_CONFIG from the constructor when the config is unusable.
 */
export class LocalObjectStorage implements ObjectStorage {
  readonly driver = 'local' as const;
  /** Normalised mount path, e.g. `/storage/v1` (leading `/`, no trailing `/`). */
  readonly pathPrefix: string;
  private readonly corsOrigins: string[];
  /** Upload size limit in bytes. */
  readonly maxUploadBytes: number;
  private readonly rootDir: string;
  private readonly objectsDir: string;
  private readonly metaDir: string;
  private readonly baseUrl: string;
  private readonly secret: Buffer;

  constructor(config: LocalStorageConfig) {
    if (!config || typeof config.rootDir !== 'string' || config.rootDir.trim() === '') {
      throw new StorageError('INVALID_CONFIG', 'local storage: rootDir is required');
    }
    let base: URL;
    try {
      base = new URL(config.publicBaseUrl);
    } catch {
      throw new StorageError('INVALID_CONFIG', `local storage: publicBaseUrl is not a URL: ${String(config.publicBaseUrl)}`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new StorageError('INVALID_CONFIG', 'local storage: publicBaseUrl must be http(s)');
    }
    if (typeof config.signingSecret !== 'string' || config.signingSecret.length < 16) {
      throw new StorageError('INVALID_CONFIG', 'local storage: signingSecret must have at least 16 characters');
    }
    if (!Number.isSafeInteger(config.maxUploadBytes) || config.maxUploadBytes <= 0) {
      throw new StorageError('INVALID_CONFIG', 'local storage: maxUploadBytes must be a positive integer');
    }
    const prefix = (config.pathPrefix ?? DEFAULT_PATH_PREFIX).replace(/\/+$/, '');
    if (!prefix.startsWith('/') || prefix.includes('?') || prefix.includes('#')) {
      throw new StorageError('INVALID_CONFIG', 'local storage: pathPrefix must be a path starting with "/" and not "/" alone');
    }
    this.rootDir = path.resolve(config.rootDir);
    this.objectsDir = path.join(this.rootDir, 'objects');
    this.metaDir = path.join(this.rootDir, 'meta');
    this.baseUrl = `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
    this.secret = Buffer.from(config.signingSecret, 'utf8');
    this.maxUploadBytes = config.maxUploadBytes;
    this.pathPrefix = prefix;
    this.corsOrigins = (config.corsOrigins ?? ['*']).map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean);
  }

  /** Signs a PUT URL. @throws StorageError INVALID_KEY, INVALID_ARGUMENT. */
  async presignPut(key: string, opts: PresignPutOptions): Promise<PresignedUrl> {
    assertValidKey(key);
    const expiresIn = assertExpiry(opts?.expiresInSeconds);
    const contentType = assertHeaderText('contentType', opts.contentType);
    const length = opts.contentLength;
    if (length !== undefined && (!Number.isSafeInteger(length) || length < 0)) {
      throw new StorageError('INVALID_ARGUMENT', 'contentLength must be a whole number of bytes (0 or more)');
    }
    return this.presign('PUT', key, expiresIn, contentType, '', length === undefined ? '' : String(length));
  }

  /** Signs a GET (and HEAD) URL. @throws StorageError INVALID_KEY, INVALID_ARGUMENT. */
  async presignGet(key: string, opts: PresignGetOptions): Promise<PresignedUrl> {
    assertValidKey(key);
    const expiresIn = assertExpiry(opts?.expiresInSeconds);
    const contentType = assertHeaderText('contentType', opts.contentType);
    const fileName = assertHeaderText('fileName', opts.fileName);
    return this.presign('GET', key, expiresIn, contentType, fileName);
  }

  /** @throws StorageError INVALID_KEY, UNAVAILABLE (filesystem error). */
  async stat(key: string): Promise<ObjectInfo | null> {
    const file = this.objectPath(assertValidKey(key));
    let size: number;
    try {
      const st = await fsp.stat(file);
      if (!st.isFile()) return null;
      size = st.size;
    } catch (err) {
      if (isMissing(err)) return null;
      throw fsError(err, `stat ${key}`);
    }
    const meta = await this.readSidecar(key);
    return { size, contentType: meta?.contentType ?? null, ...(meta?.etag ? { etag: meta.etag.replace(/"/g, '') } : {}) };
  }

  /** Streams a copy to `filePath` via a temp file + rename. @throws StorageError NOT_FOUND, INVALID_KEY, UNAVAILABLE. */
  async downloadToFile(key: string, filePath: string): Promise<void> {
    const source = this.objectPath(assertValidKey(key));
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(source, 'r');
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        throw new StorageError('NOT_FOUND', `object not found: ${key}`);
      }
    } catch (err) {
      if (err instanceof StorageError) throw err;
      if (isMissing(err) || errno(err) === 'EISDIR') throw new StorageError('NOT_FOUND', `object not found: ${key}`);
      throw fsError(err, `open ${key}`);
    }
    const target = path.resolve(filePath);
    const tmp = `${target}.${TEMP_PREFIX}${randomBytes(6).toString('hex')}`;
    try {
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await pipeline(handle.createReadStream(), createWriteStream(tmp, { flags: 'wx' }));
      await fsp.rename(tmp, target);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw fsError(err, `download ${key} to ${filePath}`);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * Renames the object and its metadata from `from` to `to` (atomic per file). With `ifEtag`, the
   * metadata of `from` must still carry that ETag (an upload that replaced it since is not moved).
   * @throws StorageError NOT_FOUND, PRECONDITION_FAILED, INVALID_KEY, UNAVAILABLE.
   */
  async move(from: string, to: string, opts: { ifEtag?: string } = {}): Promise<void> {
    assertValidKey(from);
    assertValidKey(to);
    if (opts.ifEtag !== undefined) {
      const meta = await this.readSidecar(from);
      if (meta === null) {
        if ((await this.stat(from)) === null) throw new StorageError('NOT_FOUND', `object not found: ${from}`);
        throw new StorageError('PRECONDITION_FAILED', `move ${from}: no metadata to compare the ETag with`);
      }
      if (meta.etag.replace(/"/g, '') !== opts.ifEtag) throw new StorageError('PRECONDITION_FAILED', `move ${from}: the object changed since it was checked`);
    }
    const target = this.objectPath(to);
    const metaTarget = this.sidecarPath(to);
    try {
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await fsp.mkdir(path.dirname(metaTarget), { recursive: true });
      await fsp.rename(this.objectPath(from), target);
    } catch (err) {
      if (isMissing(err)) throw new StorageError('NOT_FOUND', `object not found: ${from}`);
      throw fsError(err, `move ${from} to ${to}`);
    }
    try {
      await fsp.rename(this.sidecarPath(from), metaTarget);
    } catch (err) {
      if (!isMissing(err)) throw fsError(err, `move metadata of ${from} to ${to}`);
      await fsp.rm(metaTarget, { force: true }).catch(() => undefined);
    }
    await pruneEmptyDirs(path.dirname(this.objectPath(from)), this.objectsDir);
    await pruneEmptyDirs(path.dirname(this.sidecarPath(from)), this.metaDir);
  }

  /**
   * Refuses every later PUT to the presigned URLs of `key` (403 AccessDenied): writes a marker
   * `<rootDir>/closed/<sha256(key)>` that the PUT handler checks before and after receiving a body.
   * @throws StorageError INVALID_KEY, UNAVAILABLE.
   */
  async closeUploads(key: string): Promise<void> {
    const marker = this.closedMarkerPath(assertValidKey(key));
    try {
      await fsp.mkdir(path.dirname(marker), { recursive: true });
      await fsp.writeFile(marker, key);
    } catch (err) {
      throw fsError(err, `close uploads of ${key}`);
    }
  }

  /** Removes the marker of {@link closeUploads}; absent is fine. @throws StorageError INVALID_KEY, UNAVAILABLE. */
  async reopenUploads(key: string): Promise<void> {
    try {
      await fsp.unlink(this.closedMarkerPath(assertValidKey(key)));
    } catch (err) {
      if (!isMissing(err)) throw fsError(err, `reopen uploads of ${key}`);
    }
  }

  /** Removes the object and its metadata; absent is fine. @throws StorageError INVALID_KEY, UNAVAILABLE. */
  async delete(key: string): Promise<void> {
    assertValidKey(key);
    for (const [file, root] of [
      [this.objectPath(key), this.objectsDir],
      [this.sidecarPath(key), this.metaDir],
    ] as const) {
      try {
        await fsp.unlink(file);
      } catch (err) {
        const code = errno(err);
        if (!isMissing(err) && code !== 'EISDIR' && code !== 'EPERM') throw fsError(err, `delete ${key}`);
      }
      await pruneEmptyDirs(path.dirname(file), root);
    }
  }

  /** Creates `<rootDir>/objects` and `<rootDir>/meta` and checks they are writable. @throws StorageError UNAVAILABLE. */
  async ensureReady(): Promise<void> {
    try {
      await fsp.mkdir(this.objectsDir, { recursive: true });
      await fsp.mkdir(this.metaDir, { recursive: true });
      const probe = path.join(this.objectsDir, `${TEMP_PREFIX}probe-${randomBytes(6).toString('hex')}`);
      await fsp.writeFile(probe, '');
      await fsp.unlink(probe);
    } catch (err) {
      throw new StorageError('UNAVAILABLE', `local storage: ${this.rootDir} is not usable: ${describe(err)}`, { cause: err });
    }
  }

  /**
   * @internal Serves a presigned-URL request; use {@link createLocalStorageHandler}.
   * Resolves false (without touching `res`) when the path is not under `pathPrefix`.
   */
  async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const rawPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    if (rawPath !== this.pathPrefix && !rawPath.startsWith(`${this.pathPrefix}/`)) return false;
    const origin = req.headers.origin;
    const allowedOrigin = this.corsOrigins.includes('*') ? '*' : origin !== undefined && this.corsOrigins.includes(origin) ? origin : null;
    if (allowedOrigin !== null) {
      res.setHeader('Access-Control-Allow-Origin', allowedOrigin);
      res.setHeader('Access-Control-Expose-Headers', 'ETag, Content-Length, Content-Disposition, Content-Range');
    }
    if (allowedOrigin !== '*') res.setHeader('Vary', 'Origin');
    try {
      if ((req.method ?? '').toUpperCase() === 'OPTIONS' && origin !== undefined && allowedOrigin === null) {
        throw new HttpFailure(403, 'AccessForbidden', 'CORSResponse: this origin is not allowed to use storage URLs (STORAGE_CORS_ORIGINS).');
      }
      await this.serve(req, res, rawPath.slice(this.pathPrefix.length + 1), new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : ''));
    } catch (err) {
      if (err instanceof ClientGone) {
        res.destroy();
      } else if (err instanceof HttpFailure) {
        sendError(req, res, err);
      } else {
        sendError(req, res, new HttpFailure(500, 'InternalError', 'The storage could not complete the request.'));
      }
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------

  private presign(method: 'PUT' | 'GET', key: string, expiresIn: number, contentType: string, fileName: string, contentLength = ''): PresignedUrl {
    const expires = Math.floor(Date.now() / 1000) + expiresIn;
    const query = new URLSearchParams();
    query.set(LOCAL_QUERY.method, method);
    query.set(LOCAL_QUERY.expires, String(expires));
    query.set(LOCAL_QUERY.contentType, contentType);
    if (fileName) query.set(LOCAL_QUERY.fileName, fileName);
    if (contentLength) query.set(LOCAL_QUERY.contentLength, contentLength);
    query.set(LOCAL_QUERY.signature, this.sign(method, key, String(expires), contentType, fileName, contentLength));
    const encodedKey = key.split('/').map(encodeURIComponent).join('/');
    return {
      url: `${this.baseUrl}${this.pathPrefix}/${encodedKey}?${query.toString().replace(/\+/g, '%20')}`,
      method,
      expiresAt: new Date(expires * 1000),
    };
  }

  /** HMAC of the signed fields; the declared content length joins them only when the URL has one (URLs signed before it existed stay valid). */
  private sign(method: string, key: string, expires: string, contentType: string, fileName: string, contentLength = ''): string {
    const fields = [SIGNATURE_VERSION, method, key, expires, contentType, fileName, ...(contentLength ? [contentLength] : [])];
    return createHmac('sha256', this.secret).update(fields.join('\n'), 'utf8').digest('hex');
  }

  private async serve(req: IncomingMessage, res: ServerResponse, encodedKey: string, query: URLSearchParams): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    if (method === 'OPTIONS') {
      // CORS preflight for browsers uploading/downloading directly; the URL carries its own authorization.
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, PUT',
        'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? 'Content-Type',
        'Access-Control-Max-Age': '600',
        'Content-Length': '0',
      });
      res.end();
      return;
    }
    if (method !== 'GET' && method !== 'HEAD' && method !== 'PUT') {
      throw new HttpFailure(405, 'MethodNotAllowed', 'Only GET, HEAD and PUT are allowed.', { Allow: 'GET, HEAD, PUT' });
    }

    let key: string;
    try {
      key = encodedKey.split('/').map(decodeURIComponent).join('/');
      assertValidKey(key);
    } catch {
      throw new HttpFailure(400, 'InvalidKey', 'The object key is not valid.');
    }

    const signedMethod = query.get(LOCAL_QUERY.method);
    const expires = query.get(LOCAL_QUERY.expires);
    const signature = query.get(LOCAL_QUERY.signature);
    if (!signedMethod || !expires || !signature) {
      throw new HttpFailure(403, 'AccessDenied', 'The URL is not a presigned storage URL (missing signature parameters).');
    }
    const signedType = query.get(LOCAL_QUERY.contentType) ?? '';
    const fileName = query.get(LOCAL_QUERY.fileName) ?? '';
    const signedLength = query.get(LOCAL_QUERY.contentLength) ?? '';
    if (!this.verify(signature, this.sign(signedMethod, key, expires, signedType, fileName, signedLength))) {
      throw new HttpFailure(403, 'SignatureDoesNotMatch', 'The request signature does not match.');
    }
    if (!/^\d{1,12}$/.test(expires) || Date.now() >= Number(expires) * 1000) {
      throw new HttpFailure(403, 'AccessDenied', 'Request has expired.');
    }
    const allowed = signedMethod === 'GET' ? ['GET', 'HEAD'] : [signedMethod];
    if (!allowed.includes(method)) {
      throw new HttpFailure(405, 'MethodNotAllowed', `This URL allows ${allowed.join(' and ')} only.`, { Allow: allowed.join(', ') });
    }

    if (method === 'PUT') await this.servePut(req, res, key, /^\d{1,15}$/.test(signedLength) ? Number(signedLength) : null);
    else await this.serveGet(req, res, key, method === 'HEAD', signedType, fileName);
  }

  private verify(givenHex: string, expectedHex: string): boolean {
    const given = /^[0-9a-fA-F]{64}$/.test(givenHex) ? Buffer.from(givenHex, 'hex') : Buffer.alloc(32);
    const ok = timingSafeEqual(given, Buffer.from(expectedHex, 'hex'));
    return ok && givenHex.length === 64;
  }

  /**
   * Stores the body of a PUT. At most `signedLength` bytes (the size declared when the URL was
   * signed) when the URL has one, and never more than `maxUploadBytes`: a larger Content-Length, or
   * more bytes than that arriving, → 413 EntityTooLarge and nothing stored.
   */
  private async servePut(req: IncomingMessage, res: ServerResponse, key: string, signedLength: number | null): Promise<void> {
    const limit = signedLength === null ? this.maxUploadBytes : Math.min(signedLength, this.maxUploadBytes);
    const tooLarge = () =>
      signedLength !== null && signedLength <= this.maxUploadBytes
        ? new HttpFailure(
            413,
            'EntityTooLarge',
            `The upload exceeds the size declared for this upload slot (${signedLength} bytes): create the document again with the real size_bytes.`,
          )
        : new HttpFailure(413, 'EntityTooLarge', `The upload exceeds the maximum of ${this.maxUploadBytes} bytes.`);
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) throw tooLarge();
    const closed = new HttpFailure(403, 'AccessDenied', 'This upload URL is closed: the document is no longer awaiting its upload.');
    if (await this.uploadsClosed(key)) throw closed;
    const contentType = normalizeContentType(req.headers['content-type']) ?? FALLBACK_CONTENT_TYPE;
    const target = this.objectPath(key);
    const dir = path.dirname(target);
    const tmp = path.join(dir, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);

    await this.mkdirFor(dir, key);
    let received: { size: number; md5: string };
    try {
      received = await receiveBody(req, tmp, limit);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      if (err instanceof UploadTooLarge) throw tooLarge();
      if (err instanceof ClientGone) throw err;
      throw new HttpFailure(500, 'InternalError', 'The upload could not be stored.');
    }

    // Closed while the body was arriving (the slot was processed or deleted meanwhile): dropped.
    if (await this.uploadsClosed(key)) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw closed;
    }
    const etag = `"${received.md5}"`;
    const sidecar: Sidecar = { size: received.size, contentType, etag, uploadedAt: new Date().toISOString() };
    const metaFile = this.sidecarPath(key);
    const metaTmp = path.join(path.dirname(metaFile), `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
    try {
      await fsp.rename(tmp, target);
      await fsp.mkdir(path.dirname(metaFile), { recursive: true });
      await fsp.writeFile(metaTmp, JSON.stringify(sidecar), { flag: 'wx' });
      await fsp.rename(metaTmp, metaFile);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      await fsp.rm(metaTmp, { force: true }).catch(() => undefined);
      const code = errno(err);
      if (code === 'EISDIR' || code === 'ENOTDIR' || code === 'EEXIST' || code === 'ENOTEMPTY') {
        throw new HttpFailure(409, 'KeyConflict', 'The key collides with another object path.');
      }
      throw err;
    }
    res.writeHead(200, { ETag: etag, 'Content-Length': '0' });
    res.end();
  }

  private async mkdirFor(dir: string, key: string): Promise<void> {
    try {
      await fsp.mkdir(dir, { recursive: true });
    } catch (err) {
      const code = errno(err);
      if (code === 'ENOTDIR' || code === 'EEXIST') {
        throw new HttpFailure(409, 'KeyConflict', 'The key collides with another object path.');
      }
      if (code === 'ENAMETOOLONG') throw new HttpFailure(400, 'InvalidKey', 'The object key is too long for this storage.');
      throw fsError(err, `mkdir for ${key}`);
    }
  }

  private async serveGet(req: IncomingMessage, res: ServerResponse, key: string, headOnly: boolean, signedType: string, fileName: string): Promise<void> {
    let handle: fsp.FileHandle;
    let size: number;
    let mtime: Date;
    try {
      handle = await fsp.open(this.objectPath(key), 'r');
    } catch (err) {
      if (isMissing(err) || errno(err) === 'EISDIR' || errno(err) === 'ENAMETOOLONG') {
        throw new HttpFailure(404, 'NoSuchKey', 'The specified key does not exist.');
      }
      throw err;
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new HttpFailure(404, 'NoSuchKey', 'The specified key does not exist.');
      size = st.size;
      mtime = st.mtime;
      const meta = await this.readSidecar(key);
      const headers: Record<string, string> = {
        'Content-Type': signedType || meta?.contentType || FALLBACK_CONTENT_TYPE,
        'Last-Modified': mtime.toUTCString(),
        'Accept-Ranges': 'bytes',
        'Cache-Control': 'private, no-cache',
        'X-Content-Type-Options': 'nosniff',
        // The gateway serves user files on its own origin: never let them run as a page.
        'Content-Security-Policy': "default-src 'none'; sandbox",
      };
      if (meta?.etag) headers.ETag = meta.etag;
      if (fileName) headers['Content-Disposition'] = contentDisposition(fileName);

      let start = 0;
      let end = size - 1;
      let status = 200;
      const range = parseRange(req.headers.range, size);
      if (range === 'unsatisfiable') {
        throw new HttpFailure(416, 'InvalidRange', 'The requested range is not satisfiable.', { 'Content-Range': `bytes */${size}` });
      }
      if (range) {
        [start, end] = range;
        status = 206;
        headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
      }
      headers['Content-Length'] = String(size === 0 ? 0 : end - start + 1);
      res.writeHead(status, headers);
      if (headOnly || size === 0) {
        res.end();
        return;
      }
      try {
        await pipeline(handle.createReadStream({ start, end, autoClose: false }), res);
      } catch {
        throw new ClientGone('download interrupted');
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  private objectPath(key: string): string {
    return path.join(this.objectsDir, ...key.split('/'));
  }

  private closedMarkerPath(key: string): string {
    return path.join(this.rootDir, 'closed', createHash('sha256').update(key, 'utf8').digest('hex'));
  }

  private async uploadsClosed(key: string): Promise<boolean> {
    try {
      await fsp.access(this.closedMarkerPath(key));
      return true;
    } catch {
      return false;
    }
  }

  private sidecarPath(key: string): string {
    return `${path.join(this.metaDir, ...key.split('/'))}.json`;
  }

  private async readSidecar(key: string): Promise<Sidecar | null> {
    try {
      const parsed = JSON.parse(await fsp.readFile(this.sidecarPath(key), 'utf8')) as Sidecar;
      return parsed && typeof parsed === 'object' ? parsed : null;
    } catch (err) {
      if (isMissing(err) || err instanceof SyntaxError || errno(err) === 'EISDIR') return null;
      throw fsError(err, `read metadata of ${key}`);
    }
  }
}

/**
 * Creates the HTTP handler for a {@link LocalObjectStorage}'s presigned URLs, to be mounted by
 * the gateway on `storage.pathPrefix` (e.g. from a Fastify `onRequest` hook with
 * `reply.hijack()`, before any body parsing: the handler reads the raw request body itself).
 *
 * Returns `false` without touching the response when the request path is not under
 * `pathPrefix`; otherwise answers the request completely and resolves `true` (it never rejects).
 *
 * Answers (error bodies are `{"error":{"code":"…","message":"…"}}`, `application/json`; none on HEAD):
 * - PUT on a PUT URL: body streamed to a temp file, counted against `maxUploadBytes` and the size
 *   signed into the URL (`X-Kb-Content-Length`, the document's `size_bytes`), renamed into place on
 *   completion; `200` with `ETag: "<md5>"`. Over either limit (Content-Length or bytes counted): `413
 *   EntityTooLarge`, nothing stored. Client disconnect: nothing stored. The request's Content-Type
 *   (normalised) is recorded, whatever the signed one was (see {@link LocalObjectStorage}).
 * - GET/HEAD on a GET URL: `200` (or `206` for a single `Range`) with the signed Content-Type,
 *   `Content-Disposition: attachment; filename="…"; filename*=UTF-8''…`, `ETag`, `Content-Length`.
 *   Missing object: `404 NoSuchKey`.
 * - Expired: `403 AccessDenied`; bad or missing signature: `403 SignatureDoesNotMatch` /
 *   `AccessDenied`; method other than the signed one (HEAD is allowed on GET URLs): `405
 *   MethodNotAllowed`; malformed key: `400 InvalidKey`; key colliding with a directory: `409
 *   KeyConflict`; OPTIONS: CORS preflight `204`.
 */
export function createLocalStorageHandler(storage: LocalObjectStorage): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return (req, res) => storage.handleHttp(req, res);
}

// -----------------------------------------------------------------------------------------------

/**
 * Streams `req` into a new file `tmp`, counting bytes and hashing. Rejects with UploadTooLarge
 * (after which the rest of the body is drained and discarded, so the 413 reaches the client) or
 * ClientGone (the client disconnected before the body was complete). Never destroys `req`.
 */
function receiveBody(req: IncomingMessage, tmp: string, maxBytes: number): Promise<{ size: number; md5: string }> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(tmp, { flags: 'wx' });
    const md5 = createHash('md5');
    let size = 0;
    let settled = false;

    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onReqError);
    };
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      cleanup();
      req.resume(); // discard the rest so the error response can be delivered
      out.destroy();
      out.once('close', () => reject(err));
      if (out.closed) reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(new UploadTooLarge());
      md5.update(chunk);
      if (!out.write(chunk)) {
        req.pause();
        out.once('drain', () => {
          if (!settled) req.resume();
        });
      }
    };
    const onEnd = () => {
      if (!req.complete) return fail(new ClientGone('request body incomplete'));
      cleanup();
      out.end();
    };
    const onClose = () => {
      if (!req.complete) fail(new ClientGone('client disconnected during upload'));
    };
    const onReqError = () => fail(new ClientGone('client connection error during upload'));

    out.on('error', (err) => fail(err));
    out.on('finish', () => {
      if (settled) return;
      // Durable before it becomes visible: fsync, then the caller renames.
      fsp
        .open(tmp, 'r')
        .then(async (fh) => {
          try {
            await fh.sync();
          } finally {
            await fh.close();
          }
        })
        .then(() => {
          if (settled) return;
          settled = true;
          resolve({ size, md5: md5.digest('hex') });
        }, fail);
    });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    req.on('error', onReqError);
  });
}

/** Parses a single `bytes=` range. null = serve whole; 'unsatisfiable' = 416. Multi-ranges are ignored. */
function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size || size === 0) return 'unsatisfiable';
  return [start, end];
}

/** Largest refused request body read and discarded (rather than the connection closed) so the client reads the error: 64 MiB. */
const REFUSED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;

/** Reads and drops the rest of `req`'s body; past REFUSED_BODY_DRAIN_BYTES (a lying Content-Length) the socket is closed. */
function discardBody(req: IncomingMessage): void {
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REFUSED_BODY_DRAIN_BYTES) req.socket.destroy();
  });
  req.resume();
}

function sendError(req: IncomingMessage, res: ServerResponse, failure: HttpFailure): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = req.method === 'HEAD' ? '' : JSON.stringify({ error: { code: failure.code, message: failure.message } });
  const headers: Record<string, string> = {
    ...failure.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
  };
  // A request body we did not read (or stopped reading). Declared up to REFUSED_BODY_DRAIN_BYTES:
  // the rest is read and discarded, so a client still sending (a 20 MB PUT into a 5-byte slot)
  // reads this answer instead of EPIPE/ECONNRESET. Larger or of unknown length: the connection
  // is closed after answering, while Node drains what is in flight.
  if (!req.complete) {
    const declared = Number(req.headers['content-length']);
    if (Number.isSafeInteger(declared) && declared <= REFUSED_BODY_DRAIN_BYTES) discardBody(req);
    else headers.Connection = 'close';
  }
  res.writeHead(failure.status, headers);
  res.end(body);
}

async function pruneEmptyDirs(dir: string, stopAt: string): Promise<void> {
  let current = dir;
  while (current.startsWith(stopAt + path.sep) && current !== stopAt) {
    try {
      await fsp.rmdir(current);
    } catch {
      return; // not empty, gone, or in use by a concurrent upload
    }
    current = path.dirname(current);
  }
}

function errno(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

function isMissing(err: unknown): boolean {
  const code = errno(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function fsError(err: unknown, what: string): StorageError {
  if (err instanceof StorageError) return err;
  if (errno(err) === 'ENAMETOOLONG') return new StorageError('INVALID_KEY', `${what}: key too long for this filesystem`, { cause: err });
  return new StorageError('UNAVAILABLE', `local storage: ${what} failed: ${describe(err)}`, { cause: err });
}
