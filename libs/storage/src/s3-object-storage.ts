import { randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Client, CopyConditions, S3Error } from 'minio';
import { StorageError } from './errors';
import { assertExpiry, assertHeaderText, assertValidKey, contentDisposition, normalizeContentType, TEMP_PREFIX } from './keys';
import type { ObjectInfo, ObjectStorage, PresignedUrl, PresignGetOptions, PresignPutOptions } from './types';

/** Configuration of {@link S3ObjectStorage}. */
export interface S3StorageConfig {
  /** Host name or IP of the S3 endpoint as this service reaches it (no scheme), e.g. `minio`. */
  endPoint: string;
  /** TCP port; default 443 with SSL, 80 without. */
  port?: number;
  useSSL: boolean;
  accessKey: string;
  secretKey: string;
  /** Bucket for all objects; created by {@link S3ObjectStorage.ensureReady} when missing. */
  bucket: string;
  /** Signing region; default `us-east-1` (MinIO's default). Set for AWS buckets elsewhere. */
  region?: string;
  /**
   * Endpoint that clients outside the cluster use, when different from `endPoint`: either
   * `host[:port]` (same scheme as `useSSL`) or a URL `http(s)://host[:port]`. Presigned URLs are
   * signed for this host (SigV4 signs the Host header), so it must reach the same S3 service.
   */
  publicEndpoint?: string;
  /** Timeout of {@link S3ObjectStorage.ensureReady} in milliseconds; default 10000. */
  readyTimeoutMs?: number;
}

const DEFAULT_REGION = 'us-east-1';
const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
  'ESOCKETTIMEDOUT',
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);
const UNAVAILABLE_CODES = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'NoSuchBucket',
  'XMinioServerNotInitialized',
  'XMinioStorageFull',
  'XMinioReadQuorum',
  'XMinioWriteQuorum',
]);
const DENIED_CODES = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken', 'RequestTimeTooSkewed']);
const NOT_FOUND_CODES = new Set(['NoSuchKey', 'NotFound', 'NoSuchVersion']);

/**
 * Object storage on MinIO or any S3-compatible service, through the `minio` client (SigV4,
 * path-style requests).
 *
 * - Presigned PUT URLs sign only the host header (the `minio` client's presigning), so the
 *   upload is accepted with any Content-Type and S3 stores the one sent; `stat` reports it
 *   normalised. This is the content-type policy of both drivers (see {@link ObjectStorage}).
 * - An upload without Content-Type is stored by S3 as `binary/octet-stream`; `stat` reports
 *   `application/octet-stream`, like the local driver.
 * - Presigned GET URLs carry `response-content-type` and `response-content-disposition`
 *   (`attachment; filename="…"; filename*=UTF-8''…`), so S3 serves them with those headers.
 *   SigV4 signs the method: HEAD on a GET URL is refused (403) by S3, unlike the local driver.
 * - With `publicEndpoint`, URLs are signed for that host; signing needs no network call
 *   (the region is fixed in the config).
 *
 * Errors: connection failures, 5xx and a missing bucket → `StorageError('UNAVAILABLE')`;
 * rejected credentials → `ACCESS_DENIED`; missing object → `null` from `stat`, `NOT_FOUND` from
 * `downloadToFile`, nothing from `delete`; invalid keys → `INVALID_KEY` (checked locally first).
 *
 * @throws StorageError INVALID_CONFIG from the constructor when the config is unusable.
 */
export class S3ObjectStorage implements ObjectStorage {
  readonly driver = 's3' as const;
  readonly bucket: string;
  private readonly client: Client;
  private readonly presignClient: Client;
  private readonly region: string;
  private readonly readyTimeoutMs: number;

  constructor(config: S3StorageConfig) {
    if (!config || !config.endPoint || !config.bucket || !config.accessKey || !config.secretKey) {
      throw new StorageError('INVALID_CONFIG', 's3 storage: endPoint, bucket, accessKey and secretKey are required');
    }
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(config.bucket) || config.bucket.includes('..')) {
      throw new StorageError('INVALID_CONFIG', `s3 storage: invalid bucket name: ${config.bucket}`);
    }
    this.bucket = config.bucket;
    this.region = config.region || DEFAULT_REGION;
    this.readyTimeoutMs = config.readyTimeoutMs ?? 10_000;
    const common = { accessKey: config.accessKey, secretKey: config.secretKey, region: this.region, pathStyle: true };
    try {
      this.client = new Client({ ...common, endPoint: config.endPoint, port: config.port, useSSL: config.useSSL });
      this.presignClient = config.publicEndpoint ? new Client({ ...common, ...parsePublicEndpoint(config.publicEndpoint, config.useSSL) }) : this.client;
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('INVALID_CONFIG', `s3 storage: ${describe(err)}`, { cause: err });
    }
  }

  /** Signs a PUT URL (any Content-Type accepted, see class doc). @throws StorageError INVALID_KEY, INVALID_ARGUMENT. */
  async presignPut(key: string, opts: PresignPutOptions): Promise<PresignedUrl> {
    assertValidKey(key);
    const expiresIn = assertExpiry(opts?.expiresInSeconds);
    assertHeaderText('contentType', opts.contentType);
    const now = new Date();
    const url = await this.call('presign PUT', () => this.presignClient.presignedUrl('PUT', this.bucket, key, expiresIn, {}, now));
    return { url, method: 'PUT', expiresAt: expiry(now, expiresIn) };
  }

  /** Signs a GET URL served with `contentType` and an attachment disposition. @throws StorageError INVALID_KEY, INVALID_ARGUMENT. */
  async presignGet(key: string, opts: PresignGetOptions): Promise<PresignedUrl> {
    assertValidKey(key);
    const expiresIn = assertExpiry(opts?.expiresInSeconds);
    const contentType = assertHeaderText('contentType', opts.contentType);
    const fileName = assertHeaderText('fileName', opts.fileName);
    const now = new Date();
    const url = await this.call('presign GET', () =>
      this.presignClient.presignedGetObject(
        this.bucket,
        key,
        expiresIn,
        {
          'response-content-type': contentType,
          'response-content-disposition': contentDisposition(fileName),
        },
        now,
      ),
    );
    return { url, method: 'GET', expiresAt: expiry(now, expiresIn) };
  }

  /** HEAD of the object. @throws StorageError INVALID_KEY, UNAVAILABLE, ACCESS_DENIED. */
  async stat(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key);
    try {
      const st = await this.client.statObject(this.bucket, key);
      const contentType = normalizeContentType(st.metaData?.['content-type'] as string | undefined);
      // S3 and MinIO record `binary/octet-stream` when the upload had no Content-Type.
      return {
        size: st.size,
        contentType: contentType === 'binary/octet-stream' ? 'application/octet-stream' : contentType,
        ...(st.etag ? { etag: st.etag.replace(/"/g, '') } : {}),
      };
    } catch (err) {
      const mapped = mapError(err, `stat ${key}`);
      if (mapped.code === 'NOT_FOUND') return null;
      throw mapped;
    }
  }

  /**
   * Streams the object (`getObject`) into `<filePath>.kb-tmp-<random>`, renamed to `filePath` when
   * complete and removed on failure, so `filePath` appears whole or not at all. (Not `fGetObject`:
   * it detects a missing part file with `instanceof Error`, which fails under Jest's VM realms,
   * and it leaves `.part.minio` files behind on failure.)
   * @throws StorageError NOT_FOUND, INVALID_KEY, UNAVAILABLE.
   */
  async downloadToFile(key: string, filePath: string): Promise<void> {
    assertValidKey(key);
    const target = path.resolve(filePath);
    const tmp = `${target}.${TEMP_PREFIX}${randomBytes(6).toString('hex')}`;
    try {
      await fsp.mkdir(path.dirname(target), { recursive: true });
      const body = await this.client.getObject(this.bucket, key);
      await pipeline(body, createWriteStream(tmp, { flags: 'wx' }));
      await fsp.rename(tmp, target);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw mapError(err, `download ${key}`);
    }
  }

  /**
   * Server-side copy `from` → `to` (conditioned on `ifEtag`: S3 answers 412 PreconditionFailed
   * when `from` was replaced), then removal of `from`. Metadata (Content-Type) is copied.
   * @throws StorageError NOT_FOUND, PRECONDITION_FAILED, INVALID_KEY, UNAVAILABLE, ACCESS_DENIED.
   */
  async move(from: string, to: string, opts: { ifEtag?: string } = {}): Promise<void> {
    assertValidKey(from);
    assertValidKey(to);
    const conditions = new CopyConditions();
    if (opts.ifEtag) conditions.setMatchETag(opts.ifEtag);
    try {
      await this.client.copyObject(this.bucket, to, `/${this.bucket}/${from}`, conditions);
    } catch (err) {
      if (s3Code(err) === 'PreconditionFailed')
        throw new StorageError('PRECONDITION_FAILED', `s3 storage: move ${from}: the object changed since it was checked`, { cause: err });
      throw mapError(err, `move ${from} to ${to}`);
    }
    await this.delete(from);
  }

  /** No-op: S3 presigned URLs cannot be revoked (see {@link ObjectStorage.closeUploads}). */
  async closeUploads(key: string): Promise<void> {
    assertValidKey(key);
  }

  /** No-op (see {@link closeUploads}). */
  async reopenUploads(key: string): Promise<void> {
    assertValidKey(key);
  }

  /** Removes the object; absent is fine. @throws StorageError INVALID_KEY, UNAVAILABLE, ACCESS_DENIED. */
  async delete(key: string): Promise<void> {
    assertValidKey(key);
    try {
      await this.client.removeObject(this.bucket, key);
    } catch (err) {
      const mapped = mapError(err, `delete ${key}`);
      if (mapped.code !== 'NOT_FOUND') throw mapped;
    }
  }

  /**
   * Checks the service answers and creates the bucket when missing (in `region`).
   * @throws StorageError UNAVAILABLE (unreachable, or no answer within `readyTimeoutMs`), ACCESS_DENIED.
   */
  async ensureReady(): Promise<void> {
    await withTimeout(this.readyTimeoutMs, `s3 storage: no answer from the endpoint within ${this.readyTimeoutMs} ms`, async () => {
      try {
        if (await this.client.bucketExists(this.bucket)) return;
        await this.client.makeBucket(this.bucket, this.region);
      } catch (err) {
        const code = s3Code(err);
        if (code === 'BucketAlreadyOwnedByYou') return;
        throw mapError(err, `ensure bucket ${this.bucket}`);
      }
    });
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw mapError(err, what);
    }
  }
}

function expiry(now: Date, seconds: number): Date {
  // SigV4 X-Amz-Date has second precision: the URL expires at floor(now) + seconds.
  return new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds * 1000);
}

function parsePublicEndpoint(value: string, useSSL: boolean): { endPoint: string; port?: number; useSSL: boolean } {
  let url: URL;
  try {
    url = new URL(value.includes('://') ? value : `${useSSL ? 'https' : 'http'}://${value}`);
  } catch {
    throw new StorageError('INVALID_CONFIG', `s3 storage: publicEndpoint is not a host or URL: ${value}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '')) {
    throw new StorageError('INVALID_CONFIG', `s3 storage: publicEndpoint must be http(s)://host[:port] without a path: ${value}`);
  }
  const ssl = url.protocol === 'https:';
  return { endPoint: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : ssl ? 443 : 80, useSSL: ssl };
}

function s3Code(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

function describe(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return err.errors.map(describe).join('; ');
  return err instanceof Error ? err.message || err.name : String(err);
}

/** Maps a `minio`/network error to a StorageError (see class doc). */
function mapError(err: unknown, what: string): StorageError {
  if (err instanceof StorageError) return err;
  const code = s3Code(err);
  const name = err instanceof Error ? err.name : '';
  const detail = `${what}: ${code ? `${code}: ` : ''}${describe(err)}`;
  if (code && NOT_FOUND_CODES.has(code)) return new StorageError('NOT_FOUND', `s3 storage: ${detail}`, { cause: err });
  if (code && DENIED_CODES.has(code)) return new StorageError('ACCESS_DENIED', `s3 storage: ${detail}`, { cause: err });
  if (name === 'InvalidObjectNameError') return new StorageError('INVALID_KEY', `s3 storage: ${detail}`, { cause: err });
  if (
    (code && (CONNECTION_ERRORS.has(code) || UNAVAILABLE_CODES.has(code))) ||
    (err instanceof AggregateError && err.errors.some((e) => CONNECTION_ERRORS.has(s3Code(e) ?? '')))
  ) {
    return new StorageError('UNAVAILABLE', `s3 storage: ${detail}`, { cause: err });
  }
  if (err instanceof S3Error) return new StorageError('INTERNAL', `s3 storage: ${detail}`, { cause: err });
  // Anything else from the transport (socket hang up, TLS, DNS) means we could not use the service.
  return new StorageError('UNAVAILABLE', `s3 storage: ${detail}`, { cause: err });
}

async function withTimeout<T>(ms: number, message: string, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StorageError('UNAVAILABLE', message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
