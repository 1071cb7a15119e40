// Starts the whole stack (separate processes, free ports, a fresh data folder) once for the e2e
// suite. Tests read its addresses from KB_E2E_* environment variables.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureSystemPackages, ROOT } from '../../tools/lib/bootstrap.mjs';
import { ensureLlmServer } from '../../tools/lib/llm-server.mjs';
import { startStack } from '../../tools/lib/stack.mjs';

/** Webhooks (webhooks.e2e-spec.ts): quick retries and a short attempt timeout, so retries and crash takeovers take seconds. */
const WEBHOOK_E2E_ENV = { WEBHOOK_RETRY_BASE_MS: '300', WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_POLL_INTERVAL_MS: '100' };

/**
 * The embedding model every service that embeds loads in the e2e stack: the real MiniLM of
 * ../shared/models (no download), so searches, answers and checks run hybrid for real.
 */
export const E2E_EMBEDDINGS = { KB_MODELS_DIR: path.resolve(ROOT, '../shared/models'), EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' };

export default async function globalSetup() {
  // The real model of real-model.e2e-spec.ts (tools/test.mjs has usually done this already; cached).
  if (!process.env.KB_LLM_GGUF && !process.env.KB_LLM_SKIP_REASON) {
    const llm = await ensureLlmServer();
    if (llm.ok) process.env.KB_LLM_GGUF = llm.modelPath;
    else process.env.KB_LLM_SKIP_REASON = llm.reason;
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-'));
  const { natsServer } = ensureSystemPackages();
  const stack = await startStack({
    dataDir,
    natsServer,
    quiet: true,
    env: { ...E2E_EMBEDDINGS, LOG_LEVEL: 'info', SWEEP_INTERVAL_MS: '2000', ...WEBHOOK_E2E_ENV },
  });
  globalThis.__KB_STACK__ = stack;
  process.env.KB_E2E_BASE_URL = stack.baseUrl;
  process.env.KB_E2E_DATABASE_URL = stack.databaseUrl;
  process.env.KB_E2E_NATS_URL = stack.env.NATS_URL;
  process.env.KB_E2E_DATA_DIR = dataDir;
  process.env.KB_E2E_MODELS_DIR = E2E_EMBEDDINGS.KB_MODELS_DIR;
  process.env.KB_E2E_RETRIEVAL_GRPC_URL = `127.0.0.1:${stack.ports.retrieval}`;
  process.env.KB_E2E_DOCUMENTS_GRPC_URL = `127.0.0.1:${stack.ports.documents}`;
}
