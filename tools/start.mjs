#!/usr/bin/env node
// `npm start`: sets up what is missing, starts the whole service on embedded defaults, prints the
// base URL and a demo API key. Ctrl-C stops everything; data stays in .data/ (delete it to reset).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, ensureNodeModules, ensureSystemPackages, ROOT, runChild, step } from './lib/bootstrap.mjs';
import { ensureNodeRuntime } from './lib/node-runtime.mjs';

const dataDir = path.resolve(process.env.KB_DATA_DIR ?? path.join(ROOT, '.data'));
const port = (name, fallback) => Number(process.env[name] ?? fallback);

async function main() {
  await ensureNodeRuntime();
  ensureNodeModules();
  const { natsServer } = ensureSystemPackages();
  build();
  mkdirSync(dataDir, { recursive: true });
  const modelsDir = path.resolve(process.env.KB_MODELS_DIR || path.join(dataDir, 'models'));
  const search = ensureEmbeddingModel(modelsDir);
  const { startStack } = await import('./lib/stack.mjs');
  const stack = await startStack({
    dataDir,
    natsServer,
    quiet: true,
    publicBaseUrl: process.env.PUBLIC_BASE_URL,
    env: { KB_MODELS_DIR: modelsDir },
    ports: {
      gateway: port('GATEWAY_PORT', 8080),
      postgres: port('KB_POSTGRES_PORT', 54329),
      nats: port('KB_NATS_PORT', 42229),
      documents: port('DOCUMENTS_GRPC_PORT', 50051),
      ingestion: port('INGESTION_GRPC_PORT', 50052),
      retrieval: port('RETRIEVAL_GRPC_PORT', 50053),
      check: port('CHECK_GRPC_PORT', 50054),
      agent: port('AGENT_GRPC_PORT', 50055),
      webhooks: port('WEBHOOKS_GRPC_PORT', 50056),
      metrics: {
        gateway: port('GATEWAY_METRICS_PORT', 9460),
        documents: port('DOCUMENTS_METRICS_PORT', 9461),
        ingestion: port('INGESTION_METRICS_PORT', 9462),
        retrieval: port('RETRIEVAL_METRICS_PORT', 9463),
        check: port('CHECK_METRICS_PORT', 9464),
        agent: port('AGENT_METRICS_PORT', 9465),
        webhooks: port('WEBHOOKS_METRICS_PORT', 9466),
      },
    },
  });
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    step('stopping');
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);

  let orgId, apiKey;
  try {
    ({ orgId, key: apiKey } = await demoKey(stack));
    await loadSafetyCorpus(stack);
  } catch (e) {
    // Say why first (stopping takes seconds), then leave nothing running.
    process.stderr.write(`\nnpm start failed: ${e.message}\n`);
    step('stopping');
    await stack.stop();
    process.exit(1);
  }
  const publicUrl = `http://localhost:${stack.ports.gateway}`;
  process.stdout.write(
    `\nThe service is running.\n` +
      `  Base URL:     ${publicUrl}\n` +
      `  Demo org id:  ${orgId} (Safety Assistant on)\n` +
      `  Demo API key: ${apiKey}\n` +
      `  API docs:     ${publicUrl}/docs\n` +
      `  Workspace:    ${publicUrl}/app/   (review workspace in the browser; sign in with the API key)\n` +
      `  Search:       ${search}\n` +
      `  Try:          curl -H "Authorization: Bearer ${apiKey}" ${publicUrl}/api/v2/organization\n` +
      `  Operator CLI: npm run --silent kbctl -- key list --org ${orgId} --json   (kbctl --help for every command)\n` +
      `  Logs:         ${path.join(dataDir, 'logs')}\n` +
      `Press Ctrl-C to stop. Data is kept in ${dataDir}.\n`,
  );
}

/**
 * The local embedding model (hybrid search) in `modelsDir`: used when already there, else fetched
 * from the model hub (tools/fetch-model.mjs; `HF_ENDPOINT` for a mirror) when the machine can reach
 * it. When neither works the service runs lexical-only: said here once, and by every search's
 * `degraded_reason`. Skipped when another provider is configured (`EMBEDDINGS_PROVIDER`,
 * `EMBEDDINGS_BASE_URL`).
 * @returns one line describing how search will run (for the banner).
 */
function ensureEmbeddingModel(modelsDir) {
  const provider = process.env.EMBEDDINGS_PROVIDER || (process.env.EMBEDDINGS_BASE_URL ? 'openai' : 'local');
  if (provider === 'none') return 'lexical (BM25) only: EMBEDDINGS_PROVIDER=none';
  if (provider !== 'local') return `hybrid, embeddings from ${process.env.EMBEDDINGS_BASE_URL ?? 'the configured endpoint'}`;
  step(`embedding model: looking in ${modelsDir}, else fetching it from the model hub`);
  const run = spawnSync(process.execPath, [path.join(ROOT, 'tools/fetch-model.mjs'), '--dir', modelsDir], {
    env: process.env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 15 * 60_000,
  });
  let result;
  try {
    result = JSON.parse(run.stdout.trim().split('\n').pop());
  } catch {
    result = { status: 'failed', reason: run.error?.message ?? (run.stderr.trim().split('\n').pop() || `exit ${run.status ?? run.signal}`) };
  }
  if (result.status === 'present' || result.status === 'fetched') {
    step(`embedding model ${result.model}: ${result.status === 'fetched' ? 'downloaded into' : 'found in'} ${modelsDir}`);
    return `hybrid (BM25 + ${result.model})`;
  }
  const what = result.status === 'unreachable' ? 'is not in KB_MODELS_DIR and the model hub cannot be reached' : 'could not be fetched';
  process.stderr.write(
    `! The embedding model ${result.model ?? ''} ${what}: ${result.reason}.\n` +
      `  Search runs lexical (BM25) only, and says so in every search's degraded_reason. To turn hybrid search on, copy the model's\n` +
      `  folder to ${modelsDir}/<org>/<name> (or set KB_MODELS_DIR) and restart, then run \`npm run kbctl -- reindex\` for existing documents.\n`,
  );
  return 'lexical (BM25) only: no embedding model (see above)';
}

/**
 * How long the sample corpus may take to load, in seconds: connecting, uploading and waiting for
 * ingestion, retries of transient failures included. On an idle laptop it takes about 5 s; under a
 * load average of 12 on 2 cores about a minute. 30 minutes is generous on purpose: a slow machine
 * must not fail the start-up, while a stuck ingestion still ends it with a message.
 */
const SAFETY_LOAD_TIMEOUT_S = 1800;

/** kbctl: the operator CLI as built (`dist/`), with the command shown in failure messages. */
const KBCTL = path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js');

/**
 * Runs `kbctl <args> --json` against the started stack, without blocking the supervisor.
 * @returns the JSON object it printed.
 * @throws Error naming the step, kbctl's exit status, its `{error: {code, message}}` and its last stderr lines.
 */
async function kbctl(what, stack, args) {
  const env = { ...process.env, DATABASE_URL: stack.databaseUrl, NATS_URL: stack.env.NATS_URL, DOCUMENTS_GRPC_URL: `127.0.0.1:${stack.ports.documents}` };
  return JSON.parse(await runChild(what, process.execPath, [KBCTL, ...args, '--json'], { env, show: `kbctl ${args.join(' ')} --json` }));
}

/**
 * Loads the sample construction-safety corpus (idempotent: same-named documents are replaced):
 * samples/safety-corpus, or the folder KB_SAFETY_CORPUS_DIR names. kbctl waits for the real
 * condition (every document processed) and retries transient failures itself, within
 * {@link SAFETY_LOAD_TIMEOUT_S}.
 */
async function loadSafetyCorpus(stack) {
  const folder = path.resolve(process.env.KB_SAFETY_CORPUS_DIR || path.join(ROOT, 'samples/safety-corpus'));
  const shown = folder.startsWith(ROOT + path.sep) ? path.relative(ROOT, folder) : folder;
  const what = `loading the sample safety corpus (${shown})`;
  step(what);
  await kbctl(what, stack, ['safety', 'load', folder, '--timeout', String(SAFETY_LOAD_TIMEOUT_S)]);
}

/**
 * Creates the demo organization (Safety Assistant on) and key on first start; reuses them while the
 * key still works. @returns `{ orgId, key }` as kept in `.data/demo.json`.
 */
async function demoKey(stack) {
  const file = path.join(dataDir, 'demo.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    const res = await fetch(`${stack.baseUrl}/api/v2/organization`, { headers: { Authorization: `Bearer ${saved.key}` } });
    if (res.status === 200) return { orgId: saved.org_id, key: saved.key };
  }
  step('creating the demo organization and its API key');
  const org = await kbctl('creating the demo organization', stack, ['org', 'create', '--name', 'Demo Organization', '--safety']);
  const key = await kbctl('creating the demo API key', stack, ['key', 'create', '--org', org.id, '--name', 'demo']);
  // Local demo convenience only: the service itself stores just the key's hash.
  writeFileSync(file, JSON.stringify({ org_id: org.id, key: key.key }, null, 2), { mode: 0o600 });
  return { orgId: org.id, key: key.key };
}

main().catch((e) => {
  process.stderr.write(`\nnpm start failed: ${e.message}\n`);
  process.exit(1);
});
