// Starts the whole stack (separate processes, free ports, a fresh data folder) once for the e2e
// suite. Tests read its addresses from KB_E2E_* environment variables.
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureSystemPackages } from '../../tools/lib/bootstrap.mjs';
import { startStack } from '../../tools/lib/stack.mjs';

export default async function globalSetup() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-'));
  const { natsServer } = ensureSystemPackages();
  // The real embedding model beside the repository (engineering guide: real components in tests):
  // dense retrieval, and answer sentences chosen by meaning. Without it the services run lexical only.
  const models = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../shared/models');
  const embeddings = existsSync(path.join(models, 'all-MiniLM-L6-v2')) ? { KB_MODELS_DIR: models, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' } : {};
  const stack = await startStack({
    dataDir,
    natsServer,
    quiet: true,
    env: { LOG_LEVEL: 'info', SWEEP_INTERVAL_MS: '2000', INGESTION_ACK_WAIT_MS: '5000', CHECK_RUN_ACK_WAIT_MS: '5000', ...embeddings },
  });
  globalThis.__KB_STACK__ = stack;
  process.env.KB_E2E_BASE_URL = stack.baseUrl;
  process.env.KB_E2E_DATABASE_URL = stack.databaseUrl;
  process.env.KB_E2E_NATS_URL = stack.env.NATS_URL;
  process.env.KB_E2E_DATA_DIR = dataDir;
}
