import { AppError, CONTENT_TYPE_BY_EXTENSION, contentTypeForFile, createAsyncClient, ErrorCode } from '@kb/common';
import { DocumentStatus, documentStatus } from '@kb/events';
import { documentsV1 } from '@kb/proto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { registerKbctlCommand, wholeNumberOption } from './registry';

/**
 * Reserved operator organization that owns the documents of the shared safety corpus. Its id is the
 * retrieval service's `SAFETY_CORPUS_ORG`, so the chunks ingestion indexes for these documents are
 * exactly the chunks a `CORPUS_SAFETY` search reads. No API key can belong to it: org ids of real
 * organizations are UUIDs.
 */
export const SAFETY_CORPUS_ORG_ID = '__safety__';

/** gRPC deadline of one call of the loader (ms); a call that runs into it is retried (below). */
const CALL_TIMEOUT_MS = 60_000;

/**
 * How long the first connection to the documents service may take (ms): long enough for a service
 * the launcher is restarting to come back on a loaded machine, short enough that kbctl run without
 * a stack says so soon.
 */
const CONNECT_TIMEOUT_MS = 30_000;

/** Backoff between tries of a transient failure (ms): 250 doubling to at most 5,000, until the `--timeout` deadline. */
const RETRY_INITIAL_MS = 250;
const RETRY_MAX_MS = 5_000;

/** Failures worth another try: a service restarting or overloaded (UNAVAILABLE, 429/503) or answering too late. */
const TRANSIENT_CODES = new Set<string>([ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.RATE_LIMITED, ErrorCode.TIMEOUT]);

/** HTTP statuses of the upload URL worth another try (timeout, rate limit, gateway restarting or overloaded). */
const TRANSIENT_HTTP = new Set([408, 429, 502, 503, 504]);

/** Every call of the loader runs as the reserved safety-corpus organization, with one call's deadline. */
const AS_SAFETY = { orgId: SAFETY_CORPUS_ORG_ID, timeoutMs: CALL_TIMEOUT_MS };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `attempt` until it succeeds, retrying transient failures ({@link TRANSIENT_CODES}) with
 * capped exponential backoff until `deadline` (epoch ms); each retry is said on stderr.
 * @returns what `attempt` returns.
 * @throws the first non-transient AppError at once; the last transient one, its message prefixed
 *   with `what` and the number of tries, when the deadline leaves no room for another try.
 */
export async function retryTransient<T>(what: string, deadline: number, attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (e) {
      if (!(e instanceof AppError) || !TRANSIENT_CODES.has(e.code)) throw e;
      const delay = Math.min(RETRY_MAX_MS, RETRY_INITIAL_MS * 2 ** Math.min(tries - 1, 20));
      if (Date.now() + delay >= deadline) throw new AppError(e.code, `${what} failed ${tries} time(s) until the deadline (--timeout): ${e.message}`);
      process.stderr.write(`kbctl: ${what}: ${e.message} (retry ${tries} in ${(delay / 1000).toFixed(2)} s)\n`);
      await sleep(delay);
    }
  }
}

/** The call options of one call made before `deadline`: the call's deadline, cut to what is left. */
function callOptions(deadline: number) {
  return { ...AS_SAFETY, timeoutMs: Math.max(1_000, Math.min(CALL_TIMEOUT_MS, deadline - Date.now())) };
}

/**
 * PUTs `bytes` to an upload URL once.
 * @throws AppError SERVICE_UNAVAILABLE (transient) when the connection fails or the answer is one of
 *   {@link TRANSIENT_HTTP}; INTERNAL_ERROR for any other refusal (the status and body's start in the message).
 */
async function putOnce(name: string, upload: documentsV1.UploadTarget, bytes: Buffer, timeoutMs: number): Promise<void> {
  let res: Response;
  try {
    res = await fetch(upload.url, {
      method: upload.method || 'PUT',
      headers: { 'Content-Type': upload.recommendedContentType },
      body: bytes,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, `Upload of ${name} failed: ${cause?.code ?? cause?.message ?? (e as Error).message}.`);
  }
  if (res.ok) return;
  const body = (await res.text().catch(() => '')).slice(0, 300);
  const code = TRANSIENT_HTTP.has(res.status) ? ErrorCode.SERVICE_UNAVAILABLE : ErrorCode.INTERNAL_ERROR;
  throw new AppError(code, `Upload of ${name} failed with HTTP ${res.status}${body ? `: ${body}` : ''}.`);
}

/**
 * Starts processing of one uploaded document. Processing that could not start because a backing
 * service was unavailable (the document is still awaiting processing) is retried; a document that
 * already started (`not_awaiting_upload`, an earlier try that got through) is fine.
 * @throws AppError naming the document and the reason for any other skip or failure.
 */
async function startProcessing(client: Client, name: string, id: string, deadline: number): Promise<void> {
  await retryTransient(`processing ${name}`, deadline, async () => {
    const r = await client.processDocuments({ documentIds: [id] }, callOptions(deadline));
    const failed = r.failed.find((f) => f.documentId === id);
    if (failed)
      throw new AppError(
        TRANSIENT_CODES.has(failed.error) ? (failed.error as ErrorCode) : ErrorCode.INTERNAL_ERROR,
        `Processing of ${name} did not start (${failed.error}): ${failed.message}`,
      );
    const skipped = r.skipped.find((k) => k.documentId === id);
    if (skipped && skipped.reason !== 'not_awaiting_upload')
      throw new AppError(ErrorCode.INTERNAL_ERROR, `Processing of ${name} did not start: ${skipped.reason}.`);
  });
}

const USAGE = 'Usage: kbctl safety load <folder> [--prune] [--timeout SECONDS] [--json]';

/** Address of the documents service: DOCUMENTS_GRPC_URL, else the local stack's (`.data/stack.json`), else the default port. */
function documentsAddress(): string {
  if (process.env.DOCUMENTS_GRPC_URL) return process.env.DOCUMENTS_GRPC_URL;
  const dataDir = path.resolve(process.env.KB_DATA_DIR ?? '.data');
  const state = path.join(dataDir, 'stack.json');
  if (existsSync(state)) {
    const port = (JSON.parse(readFileSync(state, 'utf8')) as { ports?: { documents?: number } } | null)?.ports?.documents;
    if (port) return `127.0.0.1:${port}`;
  }
  return '127.0.0.1:50051';
}

type Client = ReturnType<typeof createAsyncClient<typeof documentsV1.DocumentsServiceService>>;

async function listAll(client: Client, deadline: number): Promise<documentsV1.Document[]> {
  const out: documentsV1.Document[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = await retryTransient('listing the corpus', deadline, () =>
      client.listDocuments({ documentIds: [], page: { limit: 200, offset } }, callOptions(deadline)),
    );
    out.push(...page.documents);
    if (page.documents.length < 200) return out;
  }
}

async function waitProcessed(client: Client, id: string, deadline: number): Promise<{ doc: documentsV1.Document; status: DocumentStatus }> {
  for (;;) {
    const d = await retryTransient("reading a document's status", deadline, () => client.getDocument({ id }, callOptions(deadline)));
    const status = documentStatus.fromProto(d.status);
    if (status === 'completed' || status === 'failed') return { doc: d, status };
    if (Date.now() > deadline)
      throw new AppError(
        ErrorCode.TIMEOUT,
        `Timed out waiting for ${d.fileName} to be processed (status ${status}); a slower machine needs a longer --timeout.`,
      );
    await sleep(250);
  }
}

/**
 * `kbctl safety load <folder>`: loads a folder of documents into the shared construction-safety
 * corpus through the normal ingestion path (upload slot → object storage → process → extraction,
 * chunking, indexing), as documents of the reserved organization {@link SAFETY_CORPUS_ORG_ID}.
 *
 * Idempotent: a file whose name is already in the corpus replaces the old document — the new one
 * is ingested first and the old one deleted once the new one is processed, so the corpus never
 * has a gap or a duplicate. With `--prune`, corpus documents whose name is not in the folder are
 * deleted too. A file that fails to ingest keeps its previous version and is reported.
 *
 * @returns `{ folder, loaded: [{ file_name, document_id, status, chunk_count, error_message, replaced }], removed: [file_name] }`.
 * @throws AppError VALIDATION_ERROR for a missing folder or one without loadable files;
 *   SERVICE_UNAVAILABLE when the stack is not running.
 */
export async function runSafetyLoad(argv: string[]): Promise<Record<string, unknown>> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { prune: { type: 'boolean' }, timeout: { type: 'string' }, json: { type: 'boolean' } },
  });
  const [command, folderArg] = positionals;
  if (command !== 'load' || !folderArg) throw AppError.validation(USAGE);
  const folder = path.resolve(folderArg);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw AppError.validation(`Not a folder: ${folder}`);
  const files = readdirSync(folder)
    .filter((f) => contentTypeForFile(f) && statSync(path.join(folder, f)).isFile())
    .sort();
  if (files.length === 0) throw AppError.validation(`No loadable documents in ${folder} (supported: ${Object.keys(CONTENT_TYPE_BY_EXTENSION).join(' ')}).`);
  // At most a day: a longer wait is a typo, and setTimeout cannot hold more than 2^31 − 1 ms.
  const timeoutMs = (values.timeout === undefined ? 600 : wholeNumberOption(values.timeout, '--timeout', 1, 86_400)) * 1000;
  const deadline = Date.now() + timeoutMs;

  const client = createAsyncClient(documentsV1.DocumentsServiceService, documentsAddress());
  try {
    const address = documentsAddress();
    await client.waitForReady(Math.min(CONNECT_TIMEOUT_MS, timeoutMs)).catch(() => {
      throw new AppError(
        ErrorCode.SERVICE_UNAVAILABLE,
        `The documents service at ${address} is not reachable (waited ${Math.min(CONNECT_TIMEOUT_MS, timeoutMs) / 1000} s): start the stack (\`npm start\`) or set DOCUMENTS_GRPC_URL.`,
      );
    });
    const existing = await listAll(client, deadline);
    const loaded: Record<string, unknown>[] = [];
    for (const name of files) {
      const bytes = readFileSync(path.join(folder, name));
      // A reservation retried after its answer was lost leaves an unused one behind (awaiting
      // upload, no chunks): it has this file name, so the next load deletes it with the old versions.
      const slot = await retryTransient(`reserving ${name}`, deadline, () =>
        client.reserveUpload({ fileName: name, contentType: contentTypeForFile(name)!, sizeBytes: bytes.length }, callOptions(deadline)),
      );
      await retryTransient(`uploading ${name}`, deadline, () => putOnce(name, slot.upload!, bytes, callOptions(deadline).timeoutMs));
      const id = slot.document!.id;
      await startProcessing(client, name, id, deadline);
      const { doc, status } = await waitProcessed(client, id, deadline);
      const old = existing.filter((d) => d.fileName === name && d.id !== id).map((d) => d.id);
      const remove = (ids: string[]) =>
        retryTransient(`deleting old versions of ${name}`, deadline, () => client.deleteDocuments({ documentIds: ids }, callOptions(deadline)));
      if (status === 'completed' && old.length > 0) await remove(old);
      if (status === 'failed') await remove([id]);
      process.stderr.write(
        `kbctl: ${name}: ${status}${doc.chunkCount != null ? ` (${doc.chunkCount} chunks)` : ''}${doc.errorMessage ? `: ${doc.errorMessage}` : ''}\n`,
      );
      loaded.push({
        file_name: name,
        document_id: status === 'completed' ? id : null,
        status: status,
        chunk_count: doc.chunkCount ?? null,
        error_message: doc.errorMessage ?? null,
        replaced: status === 'completed' ? old.length : 0,
      });
    }
    const stale = values.prune ? existing.filter((d) => !files.includes(d.fileName)) : [];
    if (stale.length > 0)
      await retryTransient('pruning the corpus', deadline, () => client.deleteDocuments({ documentIds: stale.map((d) => d.id) }, callOptions(deadline)));
    return { folder, loaded, removed: stale.map((d) => d.fileName) };
  } finally {
    client.close();
  }
}

registerKbctlCommand({
  name: 'safety load',
  usage: 'safety load FOLDER [--prune] [--timeout SECONDS]   (the shared construction-safety corpus; replaces by file name)',
  help:
    'Loads every file of FOLDER into the shared construction-safety corpus through the normal ingestion path and waits\n' +
    'until each is completed; a file whose name is already there replaces the old document once the new one is ready.\n' +
    '  --prune             also delete corpus documents whose names are not in FOLDER\n' +
    '  --timeout SECONDS   how long to wait for the documents to be processed (1 to 86400, default 600)\n' +
    'Prints { folder, loaded: [{ file_name, document_id, status, chunk_count, error_message, replaced }], removed }.',
  options: { prune: { type: 'boolean' }, timeout: { type: 'string' } },
  run: ({ args, values }) =>
    runSafetyLoad([
      'load',
      ...args,
      ...(values.prune === true ? ['--prune'] : []),
      ...(typeof values.timeout === 'string' ? ['--timeout', values.timeout] : []),
    ]),
});
