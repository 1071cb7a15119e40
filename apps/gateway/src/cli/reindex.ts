import { AppError, createAsyncClient, ErrorCode } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { registerKbctlCommand } from './registry';

/** Org id sent with the operator call (the Reindex RPC covers every org; retrieval ignores it). */
const OPERATOR_ORG = '00000000-0000-0000-0000-000000000000';

/**
 * Where the retrieval service listens: `RETRIEVAL_GRPC_URL`, else the port of
 * the local stack started by `npm start` (`$KB_DATA_DIR/stack.json`, default `.data/stack.json`),
 * else the default `127.0.0.1:50053`.
 */
export function retrievalAddress(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RETRIEVAL_GRPC_URL) return env.RETRIEVAL_GRPC_URL;
  const state = path.join(path.resolve(env.KB_DATA_DIR ?? '.data'), 'stack.json');
  if (existsSync(state)) {
    const port = (JSON.parse(readFileSync(state, 'utf8')) as { ports?: { retrieval?: number } }).ports?.retrieval;
    if (port) return `127.0.0.1:${port}`;
  }
  return '127.0.0.1:50053';
}

/**
 * `kbctl reindex`: asks the retrieval service to drop every dense vector and re-embed every
 * document with the embedding model it has loaded. Needed after the model changed
 * (`EMBEDDINGS_PROVIDER`, `EMBEDDINGS_MODEL`, `EMBEDDINGS_DIMENSIONS`: until then searches are
 * lexical only and say so), and after a model was first put into `KB_MODELS_DIR` on a
 * service that already held documents (they were indexed lexical-only). Waits for the end (up to
 * 24 h) and returns `{ documents, chunks, model, dimensions }`.
 * @throws AppError VALIDATION_ERROR when the retrieval service has no embedding model loaded (the
 *   message says why, e.g. the local model is missing from KB_MODELS_DIR); SERVICE_UNAVAILABLE when
 *   retrieval or the embeddings provider cannot be reached.
 */
export async function runReindex(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, unknown>> {
  const client = createAsyncClient(retrievalV1.RetrievalServiceService, retrievalAddress(env));
  try {
    const res = await client.reindex({}, { orgId: OPERATOR_ORG, timeoutMs: 24 * 60 * 60 * 1000 });
    return { documents: res.documents, chunks: res.chunks, model: res.model, dimensions: res.dimensions };
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, `Cannot reach the retrieval service: ${(error as Error).message}`);
  } finally {
    client.close();
  }
}

registerKbctlCommand({
  name: 'reindex',
  usage:
    "reindex   (re-embed every document with the retrieval service's embedding model, after a model change or a first model; RETRIEVAL_GRPC_URL or the local stack)",
  help: "Re-embeds every indexed chunk with the retrieval service's current embedding model (after changing EMBEDDINGS_MODEL, or\nwhen a model was added to a stack that ran lexical only); searches stay lexical until it is done. See docs/retrieval.md.",
  run: ({ env }) => runReindex(env),
});
