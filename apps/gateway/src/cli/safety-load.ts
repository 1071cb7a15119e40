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

/** Every call of the loader runs as the reserved safety-corpus organization. */
const AS_SAFETY = { orgId: SAFETY_CORPUS_ORG_ID, timeoutMs: 60_000 };

const USAGE = 'Usage: kbctl safety load <folder> [--prune] [--timeout SECONDS] [--json]';

/** Address of the documents service: DOCUMENTS_GRPC_URL, else the local stack's (`.data/stack.json`), else the default port. */
function documentsAddress(): string {
  if (process.env.DOCUMENTS_GRPC_URL) return process.env.DOCUMENTS_GRPC_URL;
  const dataDir = path.resolve(process.env.KB_DATA_DIR ?? '.data');
  const state = path.join(dataDir, 'stack.json');
  if (existsSync(state)) {
    const port = JSON.parse(readFileSync(state, 'utf8'))?.ports?.documents;
    if (port) return `127.0.0.1:${port}`;
  }
  return '127.0.0.1:50051';
}

type Client = ReturnType<typeof createAsyncClient<typeof documentsV1.DocumentsServiceService>>;

async function listAll(client: Client): Promise<documentsV1.Document[]> {
  const out: documentsV1.Document[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = await client.listDocuments({ documentIds: [], page: { limit: 200, offset } }, AS_SAFETY);
    out.push(...page.documents);
    if (page.documents.length < 200) return out;
  }
}

async function waitProcessed(client: Client, id: string, deadline: number): Promise<{ doc: documentsV1.Document; status: DocumentStatus }> {
  for (;;) {
    const d = await client.getDocument({ id }, AS_SAFETY);
    const status = documentStatus.fromProto(d.status);
    if (status === 'completed' || status === 'failed') return { doc: d, status };
    if (Date.now() > deadline) throw new AppError(ErrorCode.TIMEOUT, `Timed out waiting for ${d.fileName} to be processed (status ${status}).`);
    await new Promise((r) => setTimeout(r, 250));
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
    await client.waitForReady(10_000).catch(() => {
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The documents service is not reachable: start the stack (`npm start`) or set DOCUMENTS_GRPC_URL.');
    });
    const existing = await listAll(client);
    const loaded: Record<string, unknown>[] = [];
    for (const name of files) {
      const bytes = readFileSync(path.join(folder, name));
      const slot = await client.reserveUpload({ fileName: name, contentType: contentTypeForFile(name)!, sizeBytes: bytes.length }, AS_SAFETY);
      const put = await fetch(slot.upload!.url, {
        method: slot.upload!.method || 'PUT',
        headers: { 'Content-Type': slot.upload!.recommendedContentType },
        body: bytes,
      });
      if (!put.ok) throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, `Upload of ${name} failed with HTTP ${put.status}.`);
      const id = slot.document!.id;
      await client.processDocuments({ documentIds: [id] }, AS_SAFETY);
      const { doc, status } = await waitProcessed(client, id, deadline);
      const old = existing.filter((d) => d.fileName === name && d.id !== id).map((d) => d.id);
      if (status === 'completed' && old.length > 0) await client.deleteDocuments({ documentIds: old }, AS_SAFETY);
      if (status === 'failed') await client.deleteDocuments({ documentIds: [id] }, AS_SAFETY);
      process.stderr.write(`kbctl: ${name}: ${status}${doc.chunkCount != null ? ` (${doc.chunkCount} chunks)` : ''}${doc.errorMessage ? `: ${doc.errorMessage}` : ''}\n`);
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
    if (stale.length > 0) await client.deleteDocuments({ documentIds: stale.map((d) => d.id) }, AS_SAFETY);
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
