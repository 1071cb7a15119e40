#!/usr/bin/env node
// `npm start`: sets up what is missing, starts the whole service on embedded defaults, prints the
// base URL and a demo API key. Ctrl-C stops everything; data stays in .data/ (delete it to reset).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, ensureNodeModules, ensureSystemPackages, ROOT, step } from './lib/bootstrap.mjs';

const dataDir = path.resolve(process.env.KB_DATA_DIR ?? path.join(ROOT, '.data'));
const port = (name, fallback) => Number(process.env[name] ?? fallback);

async function main() {
  ensureNodeModules();
  const { natsServer } = ensureSystemPackages();
  build();
  mkdirSync(dataDir, { recursive: true });
  const { startStack } = await import('./lib/stack.mjs');
  const stack = await startStack({
    dataDir,
    natsServer,
    quiet: true,
    publicBaseUrl: process.env.PUBLIC_BASE_URL,
    ports: {
      gateway: port('GATEWAY_PORT', 8080),
      postgres: port('KB_POSTGRES_PORT', 54329),
      nats: port('KB_NATS_PORT', 42229),
      documents: port('DOCUMENTS_GRPC_PORT', 50051),
      ingestion: port('INGESTION_GRPC_PORT', 50052),
      retrieval: port('RETRIEVAL_GRPC_PORT', 50053),
      check: port('CHECK_GRPC_PORT', 50054),
      agent: port('AGENT_GRPC_PORT', 50055),
      metrics: {
        gateway: port('GATEWAY_METRICS_PORT', 9460),
        documents: port('DOCUMENTS_METRICS_PORT', 9461),
        ingestion: port('INGESTION_METRICS_PORT', 9462),
        retrieval: port('RETRIEVAL_METRICS_PORT', 9463),
        check: port('CHECK_METRICS_PORT', 9464),
        agent: port('AGENT_METRICS_PORT', 9465),
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

  const apiKey = await demoKey(stack);
  loadSafetyCorpus(stack);
  const publicUrl = `http://localhost:${stack.ports.gateway}`;
  process.stdout.write(
    `\nThe service is running.\n` +
      `  Base URL:     ${publicUrl}\n` +
      `  Demo API key: ${apiKey}\n` +
      `  API docs:     ${publicUrl}/docs\n` +
      `  Try:          curl -H "Authorization: Bearer ${apiKey}" ${publicUrl}/api/v2/organization\n` +
      `  Operator CLI: npm run --silent kbctl -- key list --org <org id> --json\n` +
      `  Logs:         ${path.join(dataDir, 'logs')}\n` +
      `Press Ctrl-C to stop. Data is kept in ${dataDir}.\n`,
  );
}

/** Loads the shipped sample construction-safety corpus (idempotent: same-named documents are replaced). */
function loadSafetyCorpus(stack) {
  step('loading the sample safety corpus (samples/safety-corpus)');
  execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'safety', 'load', path.join(ROOT, 'samples/safety-corpus'), '--json'], {
    env: { ...process.env, DATABASE_URL: stack.databaseUrl, DOCUMENTS_GRPC_URL: `127.0.0.1:${stack.ports.documents}` },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Creates the demo organization and key on first start; reuses them while the key still works. */
async function demoKey(stack) {
  const file = path.join(dataDir, 'demo.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    const res = await fetch(`${stack.baseUrl}/api/v2/organization`, { headers: { Authorization: `Bearer ${saved.key}` } });
    if (res.status === 200) return saved.key;
  }
  const kbctl = (...args) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), ...args, '--json'], {
        env: { ...process.env, DATABASE_URL: stack.databaseUrl },
        encoding: 'utf8',
      }),
    );
  const org = kbctl('org', 'create', '--name', 'Demo Organization', '--safety');
  const key = kbctl('key', 'create', '--org', org.id, '--name', 'demo');
  // Local demo convenience only: the service itself stores just the key's hash.
  writeFileSync(file, JSON.stringify({ org_id: org.id, key: key.key }, null, 2), { mode: 0o600 });
  return key.key;
}

main().catch((e) => {
  process.stderr.write(`\nnpm start failed: ${e.message}\n`);
  process.exit(1);
});
