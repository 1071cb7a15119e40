/** What {@link ObjectStorage.stat} knows about a stored object. */
export interface ObjectInfo {
  /** Size in bytes. */
  size: number;
  /**
   * Content type recorded at upload, normalised (lowercase, parameters such as `; charset=`
   * stripped), or `null` when the backend has none.
   */
  contentType: string | null;
  /** Entity tag of this version of the object (MD5 of a single-part upload), without quotes; for {@link ObjectStorage.move}'s `ifEtag`. */
  etag?: string;
}

/** A time-limited URL that carries its own authorization (no bearer header is sent to it). */
export interface PresignedUrl {
  /** Absolute URL. */
  url: string;
  /**
   * The HTTP method the URL is valid for. The local driver also accepts `HEAD` on `GET` URLs;
   * S3 does not (SigV4 signs the method), so clients must not rely on it.
   */
  method: 'PUT' | 'GET';
  /** Instant after which the URL is refused (403). */
  expiresAt: Date;
}

/** Options of {@link ObjectStorage.presignPut}. */
export interface PresignPutOptions {
  /** The content type the client is told to send (`upload.recommended_content_type`). */
  contentType: string;
  /** Lifetime in seconds, 1..604800 (7 days, the S3 maximum). */
  expiresInSeconds: number;
  /**
   * The size the client declared (bytes, `size_bytes`), if any. The `local` driver signs it into
   * the URL and refuses a PUT carrying more (`413 EntityTooLarge`; nothing stored). The `s3` driver
   * does not bind it: there the size check of `process` (`size_mismatch`) catches a different size.
   */
  contentLength?: number;
}

/** Options of {@link ObjectStorage.presignGet}. */
export interface PresignGetOptions {
  /** Lifetime in seconds, 1..604800. */
  expiresInSeconds: number;
  /** Served as `Content-Disposition: attachment; filename="…"; filename*=UTF-8''…`. */
  fileName: string;
  /** Served as the response's `Content-Type`. */
  contentType: string;
}

/**
 * Port for object storage (original uploaded files). Keys are `/`-separated relative paths such
 * as `orgs/<org>/documents/<uuid>/original`; every method validates the key first and throws
 * `StorageError('INVALID_KEY')` for keys that are absolute, contain `.`/`..`/empty segments,
 * backslashes, NUL or control characters, or exceed 1024 bytes.
 *
 * Content type policy (both drivers): a presigned PUT does NOT bind the Content-Type. The upload
 * is accepted with whatever Content-Type the client sends, and that type (normalised) is what
 * `stat` reports; callers compare it with the declared type (the documents service reports
 * `content_type_mismatch`). S3 presigned PUTs made by the `minio` client sign only the host
 * header, so this is the behaviour both drivers can share. An upload sent without Content-Type
 * is reported as `application/octet-stream` by both drivers.
 */
export interface ObjectStorage {
  readonly driver: 'local' | 's3';
  /** URL for one PUT of the object's bytes (raw body, any Content-Type, see policy above). */
  presignPut(key: string, opts: PresignPutOptions): Promise<PresignedUrl>;
  /** URL for GET/HEAD of the object, served with the given Content-Type and attachment file name. */
  presignGet(key: string, opts: PresignGetOptions): Promise<PresignedUrl>;
  /** Size and content type, or `null` when the object is absent. Throws UNAVAILABLE on backend errors. */
  stat(key: string): Promise<ObjectInfo | null>;
  /**
   * Streams the object to `filePath` (parent directories are created; the file appears complete
   * or not at all). Never buffers the whole object. Throws NOT_FOUND when absent.
   */
  downloadToFile(key: string, filePath: string): Promise<void>;
  /**
   * Moves the object at `from` to `to` (replacing `to`): the upload slot's object becomes the
   * processed original. With `ifEtag`, only the version of `from` that was checked is moved.
   * local: atomic rename of the object and its metadata; s3: server-side copy conditioned on the
   * ETag (`x-amz-copy-source-if-match`), then delete of `from`.
   * @throws StorageError NOT_FOUND (`from` absent), PRECONDITION_FAILED (`from` was replaced
   *   since its ETag was read), INVALID_KEY, UNAVAILABLE.
   */
  move(from: string, to: string, opts?: { ifEtag?: string }): Promise<void>;
  /**
   * Closes the presigned PUT URLs of `key`: an upload slot that is no longer awaiting its bytes.
   * local: every later PUT to them is refused (403 AccessDenied). s3: a presigned URL cannot be
   * revoked before it expires, so a late PUT can still create an object at `key` until then;
   * callers keep `key` out of what they serve (see {@link move}) and delete it once the URL has
   * expired ({@link reopenUploads} after {@link delete}).
   */
  closeUploads(key: string): Promise<void>;
  /** Undoes {@link closeUploads} (local: removes the marker; s3: nothing). Absent is fine. */
  reopenUploads(key: string): Promise<void>;
  /** Deletes the object; an absent object is not an error. */
  delete(key: string): Promise<void>;
  /** Creates the root directory / bucket if missing; throws UNAVAILABLE (or ACCESS_DENIED) if unusable. */
  ensureReady(): Promise<void>;
}
