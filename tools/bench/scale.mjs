#!/usr/bin/env node
// `npm run bench:scale` (issue 33 item 3): a check run of 1,000 requirements and a batch of 500
// questions against an organization of 1M chunks, on the whole stack, with the same run and batch
// against a small organization in the same stack as the baseline. Reports, per org: wall time from
// trigger (run) or creation (batch) to completed, items per second, and the services' Prometheus
// counters per item (gRPC calls by method, JetStream messages, model tokens by model) and the mean
// time of a retrieval Search call, read from every service's /metrics before and after each phase,
// and the machine's load average at each.
//
// The large org ("Bench scale 1M"): created once with kbctl on a stack kept under --data-root
// (DIR/stack: PostgreSQL, NATS, objects; DIR/tenant.json: org id and API key). Its chunks are the
// synthetic store of `npm run bench:query` (real text from SciFact and ../shared/corpus, vectors
// derived from the model's vectors of the source passages; see tools/bench/query.mjs), built by
// `query.mjs --sizes N --org-id ORG --bulk --build-only --data-root DIR` into
// DIR/<N>-org-<ORG>-hybrid (about 13 min for 1M chunks on 2 cores; reused when present). Its
// 10,000 documents (100 chunks each) are registered as `completed` rows in the documents schema
// (what ingestion leaves), because search keeps only passages of live documents: ingesting 10,000
// documents through the pipeline is out of reach on this machine, and it is not what is measured.
// The stack's retrieval service runs with RETRIEVAL_DATA_DIR on that store.
// The small org ("Bench scale small", new on each run): the first --small-docs control procedures
// (../shared/datasets/controls/procedures) and one Markdown file of the SciFact abstracts cited
// as evidence by the first questions, uploaded and processed through the API, in the same store.
//
// Requirements: `summary` texts of the controls frameworks of the `train` split (FRAMEWORK_SPLITS
// in tools/eval/controls.ts: FedRAMP High / NIST 800-53 r4, CIS Controls v8, CSA CCM 3.0.1, CMMC
// ML1), in file order, repeated when fewer than --requirements; the run is triggered with
// skip_breakdown (each requirement checked as written, as `bench:check` does). Questions: SciFact
// train claims as yes/no questions ("Is it true that <claim>?"), one batch, org-wide.
// Usage: npm run bench:scale [-- --chunks 1000000 --requirements 1000 --questions 500 --data-root DIR]
//        (DIR defaults to ~/.cache/kb-platform/bench-scale; the 1M store takes about 6 GB of disk)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { startStack } from '../lib/stack.mjs';
import { apiCaller, newTenant, pollUntil, processDocuments, uploadDocument, waitForRunEnd } from '../lib/api-client.mjs';
import { CHUNKS_PER_DOCUMENT, singleOrgDocumentId, singleOrgStoreDir } from '../lib/bench-store.mjs';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '1000000' },
    requirements: { type: 'string', default: '1000' },
    questions: { type: 'string', default: '500' },
    'small-docs': { type: 'string', default: '10' },
    'data-root': { type: 'string', default: path.join(os.homedir(), '.cache/kb-platform/bench-scale') },
  },
});
const size = Number(values.chunks);
const dataRoot = path.resolve(values['data-root']);
const stackDir = path.join(dataRoot, 'stack');
const tenantFile = path.join(dataRoot, 'tenant.json');
const shared = path.resolve(ROOT, '../shared');
const require = createRequire(import.meta.url);
/** The embedding model the store's vectors come from (query.mjs's default), for every service. */
const modelEnv = {
  EMBEDDINGS_PROVIDER: 'local',
  KB_MODELS_DIR: process.env.KB_MODELS_DIR ?? path.join(shared, 'models'),
  EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2',
};
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const load = () => os.loadavg().map((x) => round(x));
const { natsServer } = ensureSystemPackages();

// ---- workload ----
// The controls eval's own split table and loader (dist/tools/eval/controls.js; its main runs only as a script).
const { FRAMEWORK_SPLITS, loadFramework } = require(path.join(ROOT, 'dist/tools/eval/controls.js'));
/** Framework files of the controls data set's `train` split (FRAMEWORK_SPLITS of tools/eval/controls.ts). */
const TRAIN_FRAMEWORKS = Object.keys(FRAMEWORK_SPLITS).filter((f) => FRAMEWORK_SPLITS[f] === 'train');
const requirementTexts = TRAIN_FRAMEWORKS.flatMap((f) =>
  loadFramework(path.join(shared, 'datasets/controls/standards', `${f}.json`), false).map((r) => r.text),
);
const requirements = Array.from({ length: Number(values.requirements) }, (_, i) => ({ text: requirementTexts[i % requirementTexts.length].slice(0, 2000) }));
const claims = readFileSync(path.join(shared, 'datasets/scifact/claims_train.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));
const asked = claims.slice(0, Number(values.questions));
const questions = asked.map((c) => `Is it true that ${c.claim.charAt(0).toLowerCase()}${c.claim.slice(1).replace(/\.$/, '')}?`);

// ---- metrics ----
/** Every sample of the counters read, from every service's /metrics: `service name{labels}` → value. */
async function scrape(stack) {
  const out = new Map();
  for (const [service, port] of Object.entries(stack.ports.metrics)) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const line of text.split('\n')) {
      const m =
        /^(grpc_server_handled_total|grpc_server_handling_seconds_sum|kb_nats_messages_processed_total|kb_model_tokens_total|kb_check_run_requirements_evaluated_total)(\{[^}]*\})? ([\d.e+-]+)$/.exec(
          line,
        );
      if (!m) continue;
      // Key: `<service> <metric>{labels}`, without the `service` label (the service is named first)
      // and with gRPC service names shortened (`kb.retrieval.v1.RetrievalService` → `RetrievalService`).
      const labels = [...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)]
        .filter(([, name]) => name !== 'service')
        .map(([, name, value]) => `${name}="${name === 'grpc_service' ? value.split('.').pop() : value}"`);
      out.set(`${service} ${m[1]}${labels.length ? `{${labels.join(',')}}` : ''}`, Number(m[3]));
    }
  }
  return out;
}
/**
 * Mean time the retrieval service spent per Search call between two scrapes (ms), from
 * grpc_server_handling_seconds_sum and grpc_server_handled_total (`OK` calls).
 */
function meanSearchMs(before, after) {
  const key = (m) => `retrieval ${m}{grpc_service="RetrievalService",grpc_method="Search",grpc_code="OK"}`;
  const delta = (m) => (after.get(key(m)) ?? 0) - (before.get(key(m)) ?? 0);
  return round((delta('grpc_server_handling_seconds_sum') / delta('grpc_server_handled_total')) * 1000, 1);
}

/** Counter increases between two scrapes, divided by `items` (non-zero ones only; time sums left out). */
function perItem(before, after, items) {
  const out = {};
  for (const [key, value] of after) {
    if (key.includes('_seconds_sum')) continue;
    const delta = value - (before.get(key) ?? 0);
    if (delta > 0) out[key] = round(delta / items, 3);
  }
  return out;
}

// ---- the large org: tenant, store, documents ----
async function largeTenant() {
  if (existsSync(tenantFile)) return JSON.parse(readFileSync(tenantFile, 'utf8'));
  step('creating the large org (kept in DIR/tenant.json)');
  const stack = await startStack({ dataDir: stackDir, natsServer, quiet: true, env: modelEnv });
  try {
    const { org, key } = newTenant(stack, 'Bench scale 1M', 1000000);
    mkdirSync(dataRoot, { recursive: true });
    writeFileSync(tenantFile, JSON.stringify({ orgId: org.id, key }));
    return { orgId: org.id, key };
  } finally {
    await stack.stop();
  }
}

/** Builds (or finds) the store of `size` chunks of `orgId` with query.mjs; returns its folder and load figures. */
function buildStore(orgId) {
  const storeRoot = path.join(dataRoot, 'stores');
  const dir = singleOrgStoreDir(storeRoot, size, orgId);
  step(`${existsSync(path.join(dir, 'bench-manifest.json')) ? 'reusing' : 'building'} the ${size}-chunk store of org ${orgId} (${dir})`);
  const out = execFileSync(
    process.execPath,
    [path.join(ROOT, 'tools/bench/query.mjs'), '--sizes', String(size), '--org-id', orgId, '--bulk', '--build-only', '--data-root', storeRoot],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...modelEnv }, maxBuffer: 1 << 24 },
  );
  return { dir, ...JSON.parse(out).sizes[String(size)] };
}

/** Registers the store's documents as completed rows of the documents schema (idempotent). */
async function registerDocuments(stack, orgId) {
  const { Client } = require('pg');
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const docs = Math.ceil(size / CHUNKS_PER_DOCUMENT);
    const ids = Array.from({ length: docs }, (_, d) => singleOrgDocumentId(orgId, d));
    const names = ids.map((_, d) => `doc-${d}.pdf`);
    const counts = ids.map((_, d) => Math.min(CHUNKS_PER_DOCUMENT, size - d * CHUNKS_PER_DOCUMENT));
    const res = await db.query(
      `INSERT INTO documents.documents (id, org_id, project_id, file_name, content_type, declared_size_bytes, size_bytes, status, chunk_count, page_count, storage_key, created_at, updated_at)
       SELECT id, $2, NULL, name, 'application/pdf', 0, 0, 'completed', n, 1, 'bench-scale/' || id, now(), now()
       FROM unnest($1::uuid[], $3::text[], $4::int[]) AS t(id, name, n)
       ON CONFLICT (id) DO NOTHING`,
      [ids, orgId, names, counts],
    );
    return { documents: docs, inserted: res.rowCount };
  } finally {
    await db.end();
  }
}

/**
 * Waits until process `pid` uses less than 10% of a core over 5 s (utime + stime from /proc/<pid>/stat,
 * in clock ticks of 1/100 s), at most `maxS` seconds.
 * @returns {Promise<number>} seconds waited
 */
async function waitIdle(pid, maxS = 240) {
  const cpu = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const t0 = performance.now();
  let last = cpu();
  while (performance.now() - t0 < maxS * 1000) {
    await new Promise((r) => setTimeout(r, 5000));
    const now = cpu();
    if (now - last < 50) break;
    last = now;
  }
  return round((performance.now() - t0) / 1000, 0);
}

// ---- one org's run and batch ----
/** The check run and the batch on one org, one after the other; wall times, rates, counters per item. */
async function measureOrg(stack, call, label) {
  const project = await call('POST', '/api/v2/projects', { name: `bench scale ${label}` });
  const run = await call('POST', '/api/v2/check/runs', { project_id: project.id, name: `bench scale ${label}`, requirements });
  step(`${label}: ${requirements.length}-requirement check run (skip_breakdown)`);
  let before = await scrape(stack);
  const loadBeforeRun = load();
  let t0 = performance.now();
  await call('POST', `/api/v2/check/runs/${run.id}/trigger`, { skip_breakdown: true });
  const detail = await waitForRunEnd(call, run.id, 1000);
  const runMs = performance.now() - t0;
  let after = await scrape(stack);
  const runCounters = perItem(before, after, requirements.length);
  if (detail.status !== 'completed') throw new Error(`${label}: run ended ${detail.status}: ${detail.error_message}`);
  const checkRun = {
    requirements: requirements.length,
    skip_breakdown: true,
    trigger_to_completed_s: round(runMs / 1000, 1),
    requirements_per_s: round(requirements.length / (runMs / 1000)),
    passed: detail.passed_requirements,
    failed: detail.failed_requirements,
    load_average_before_after: [loadBeforeRun, load()],
    mean_search_ms: meanSearchMs(before, after),
    per_requirement: runCounters,
  };
  process.stderr.write(`  ${label} check run: ${JSON.stringify(checkRun)}\n`);

  step(`${label}: batch of ${questions.length} questions`);
  before = await scrape(stack);
  const loadBeforeBatch = load();
  t0 = performance.now();
  const batch = await call('POST', '/api/v2/agent/batches', { name: `bench scale ${label}`, questions });
  const result = await pollUntil(call, `/api/v2/agent/batches/${batch.id}`, (d) => ['completed', 'failed'].includes(d.status), 2000);
  const batchMs = performance.now() - t0;
  after = await scrape(stack);
  const batchCounters = perItem(before, after, questions.length);
  const cited = result.results.filter((r) => r.citations.length > 0).length;
  const agentBatch = {
    questions: questions.length,
    status: result.status,
    create_to_completed_s: round(batchMs / 1000, 1),
    questions_per_s: round(questions.length / (batchMs / 1000)),
    failed_questions: result.failed_questions,
    answered_with_citations: cited,
    load_average_before_after: [loadBeforeBatch, load()],
    mean_search_ms: meanSearchMs(before, after),
    per_question: batchCounters,
  };
  process.stderr.write(`  ${label} batch: ${JSON.stringify(agentBatch)}\n`);
  return { check_run: checkRun, agent_batch: agentBatch };
}

// ---- main ----
const tenant = await largeTenant();
const store = buildStore(tenant.orgId);
step(`starting the stack on the store (RETRIEVAL_DATA_DIR=${store.dir})`);
const stack = await startStack({ dataDir: stackDir, natsServer, quiet: true, env: { ...modelEnv, RETRIEVAL_DATA_DIR: store.dir } });
try {
  const registered = await registerDocuments(stack, tenant.orgId);
  const large = apiCaller(stack, tenant.key);
  // The stack reads the org's chunks from the store: the last document's chunks, then one question whose answer is there.
  const lastDoc = singleOrgDocumentId(tenant.orgId, registered.documents - 1);
  const lastChunks = await large('GET', `/api/v2/documents/${lastDoc}/chunks?limit=100`);
  if (lastChunks.length !== size - (registered.documents - 1) * CHUNKS_PER_DOCUMENT)
    throw new Error(`document ${lastDoc}: ${lastChunks.length} chunks read back`);
  // Answerability is judged, so a question may be answered "not found" from the passages it got: the
  // probe passes when one of the first 10 supported claims is answered with citations.
  const supported = asked
    .flatMap((c, i) => (Object.values(c.evidence ?? {}).some((e) => e.some((x) => x.label === 'SUPPORT')) ? [questions[i]] : []))
    .slice(0, 10);
  let probe = null;
  for (const q of supported) {
    probe = await large('POST', '/api/v2/agent/query', { question: q });
    if (probe.citations.length > 0) break;
  }
  if (!probe?.citations.length) throw new Error(`the large org's search cited nothing for ${supported.length} supported claims: ${JSON.stringify(probe)}`);

  step('the small org: uploading and processing its documents');
  const small = newTenant(stack, 'Bench scale small', 1000000);
  const corpus = JSON.parse(`[${readFileSync(path.join(shared, 'datasets/scifact/corpus.jsonl'), 'utf8').trim().split('\n').join(',')}]`);
  const citedIds = new Set(asked.flatMap((c) => Object.keys(c.evidence ?? {})));
  const abstracts = corpus.filter((d) => citedIds.has(String(d.doc_id))).slice(0, 100);
  const files = [
    ...readdirSync(path.join(shared, 'datasets/controls/procedures'))
      .sort()
      .slice(0, Number(values['small-docs']))
      .map((f) => ({ fileName: f, bytes: readFileSync(path.join(shared, 'datasets/controls/procedures', f)) })),
    { fileName: 'scifact-abstracts.md', bytes: Buffer.from(abstracts.map((d) => `## ${d.title}\n\n${d.abstract.join(' ')}\n`).join('\n')) },
  ];
  const ids = [];
  for (const f of files) ids.push(await uploadDocument(small.call, { ...f, contentType: 'text/markdown' }));
  const smallDocs = await processDocuments(small.call, ids);
  // Those writes start the store's background optimize, which at 1M rows runs for tens of seconds
  // (docs/retrieval.md): wait until the retrieval process is idle, so the baseline does not pay for it.
  const settleS = await waitIdle(stack.services.get('retrieval').pid);

  const out = {
    machine: { cores: os.availableParallelism(), loadAverageAtStart: load() },
    workload: {
      requirements: `${requirements.length} summaries of the controls train frameworks (${TRAIN_FRAMEWORKS.join(', ')}; ${requirementTexts.length} distinct)`,
      questions: `${questions.length} SciFact train claims as "Is it true that …?"`,
    },
    large_org: { chunks: size, documents: registered.documents, store: { dir: store.dir, load: store.load, diskMb: store.diskMb } },
    small_org: { documents: smallDocs.length, chunks: smallDocs.reduce((n, d) => n + (d.chunk_count ?? 0), 0), retrieval_idle_after_s: settleS },
  };
  out.small_org.results = await measureOrg(stack, small.call, 'small');
  out.large_org.results = await measureOrg(stack, large, `${size} chunks`);
  const [s, l] = [out.small_org.results, out.large_org.results];
  out['ratio large/small'] = {
    check_run_wall: round(l.check_run.trigger_to_completed_s / s.check_run.trigger_to_completed_s),
    batch_wall: round(l.agent_batch.create_to_completed_s / s.agent_batch.create_to_completed_s),
  };
  out.not_counted =
    'kb_model_tokens_total counts tokens read (prompt) and written (completion) by the embedded judge and the extractive answerer, not calls; ' +
    'no counter exists for judge cross-encoder inferences or for embedding-model calls (query embeddings in retrieval, sentence embeddings in the judge)';
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await stack.stop();
}
