#!/usr/bin/env node
// `npm run bench:e2e`: the whole stack on a fresh data folder; uploads the 193-page Debian Policy
// PDF through the API and measures (1) time from `process` to `completed` against `pdftotext`
// alone on the same file in the same run (ratio), (2) query and verify latency on it (p50/p95).
// Usage: npm run bench:e2e [-- --file <pdf> --queries N]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, step } from '../lib/bootstrap.mjs';
import { pdfPages, percentile, timed } from '../lib/measure.mjs';
import { startStack } from '../lib/stack.mjs';
import { newTenant, uploadDocument } from '../lib/api-client.mjs';
import { DEBIAN_POLICY_PDF, DEBIAN_POLICY_QUESTIONS } from '../lib/debian-policy.mjs';

const { values } = parseArgs({ options: { file: { type: 'string' }, queries: { type: 'string', default: '30' } } });
const file = path.resolve(values.file ?? DEBIAN_POLICY_PDF);
const QUESTIONS = DEBIAN_POLICY_QUESTIONS;
const REQUIREMENTS = [
  'Packages must not install files into /usr/local.',
  'Configuration files must be placed under /etc.',
  'Each binary package must have a copyright file in /usr/share/doc/package.',
];

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-'));
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ dataDir, natsServer, quiet: true });
try {
  const { call } = newTenant(stack, 'Bench', 100000);
  const bytes = readFileSync(file);
  const pages = pdfPages(file);

  step('baseline: pdftotext alone on the same file');
  const base = [];
  for (let i = 0; i < 3; i++) base.push((await timed(async () => execFileSync('pdftotext', [file, '-'], { maxBuffer: 1 << 28 })))[0]);
  const baselineMs = percentile(base, 50);

  step(`ingesting ${path.basename(file)} (${pages} pages, ${(bytes.length / 1e6).toFixed(2)} MB) through the API`);
  const documentId = await uploadDocument(call, { fileName: path.basename(file), contentType: 'application/pdf', bytes });
  const t0 = process.hrtime.bigint();
  await call('POST', '/api/v2/documents/process', { document_ids: [documentId] });
  let doc;
  let readyMs = null;
  for (;;) {
    doc = await call('GET', `/api/v2/documents/${documentId}`);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (readyMs === null && ['ready', 'completed'].includes(doc.status)) readyMs = ms;
    if (doc.status === 'completed' || doc.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ingestMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (doc.status !== 'completed') throw new Error(`document failed: ${doc.error_message}`);
  const project = await call('POST', '/api/v2/projects', { name: 'bench' });

  step(`${values.queries} queries and ${REQUIREMENTS.length * 3} verifications`);
  const q = [];
  for (let i = 0; i < Number(values.queries); i++) {
    q.push((await timed(() => call('POST', '/api/v2/agent/query', { question: QUESTIONS[i % QUESTIONS.length] })))[0]);
  }
  const v = [];
  for (let i = 0; i < REQUIREMENTS.length * 3; i++) {
    v.push((await timed(() => call('POST', '/api/v2/check/verify', { project_id: project.id, requirement: REQUIREMENTS[i % REQUIREMENTS.length] })))[0]);
  }
  const health = [];
  for (let i = 0; i < 30; i++) health.push((await timed(() => fetch(`${stack.baseUrl}/healthz`).then((r) => r.text())))[0]);

  const result = {
    file: path.basename(file),
    pages,
    chunks: doc.chunk_count,
    ingest: {
      process_to_completed_ms: Math.round(ingestMs),
      process_to_searchable_ms: Math.round(readyMs),
      pdftotext_alone_ms: Math.round(baselineMs),
      ratio_to_pdftotext: +(ingestMs / baselineMs).toFixed(2),
      pages_per_s: +(pages / (ingestMs / 1000)).toFixed(1),
    },
    query_ms: { p50: Math.round(percentile(q, 50)), p95: Math.round(percentile(q, 95)), n: q.length },
    verify_ms: { p50: Math.round(percentile(v, 50)), p95: Math.round(percentile(v, 95)), n: v.length },
    healthz_ms: { p50: +percentile(health, 50).toFixed(1), note: 'unauthenticated HTTP round trip, for scale' },
  };
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
