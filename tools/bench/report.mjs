#!/usr/bin/env node
// `npm run bench:report`: the report of a 1,000-requirement check run (decisions.md "Reports",
// docs/check.md "Reports") on the whole stack (fresh data folder, free ports). A real PDF of the
// corpus (the OSHA 101 form) is ingested, a 1,000-requirement run with skip_breakdown is checked to
// `completed` (every requirement with its evidence and sources), and one requirement is reviewed.
// Then, in the same run and on the same stack, each request is made `--repeats` times (median kept):
//  - the baseline: GET /api/v2/check/runs/{id}/requirements (every requirement as JSON);
//  - GET …/report?format=xlsx|csv|pdf (the file read to its end);
// with the wall time, the bytes, the ratio to the baseline's time, and the gateway's peak RSS during
// the request: its high-water mark (VmHWM) is reset before each request (`5` written to
// /proc/<pid>/clear_refs) and read after it, next to its RSS before the request.
// Usage: npm run bench:report [-- --requirements N --repeats N]
import { readFileSync, rmSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { newTenant, processDocuments, uploadDocument, waitForRunEnd } from '../lib/api-client.mjs';
import { startStack } from '../lib/stack.mjs';

const { values } = parseArgs({ options: { requirements: { type: 'string', default: '1000' }, repeats: { type: 'string', default: '3' } } });
const PDF = path.join(ROOT, '../shared/corpus/pdf/dol_osha-101_injury_illness_incident_report.pdf');
const TEXTS = [
  'This form must be kept in the establishment for 5 years.',
  'Failure to maintain the record can result in the issuance of citations and assessment of penalties.',
  'The employer must record the mail address of the establishment.',
  'The record must state where the accident or exposure occurred.',
  'Forklift drivers must hold a valid licence renewed every year.',
];

/** RSS and peak RSS (VmHWM) of a process in MB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)[1]);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** Resets the process's peak RSS to its current RSS (Linux ≥ 4.0: clear_refs 5); false when not allowed. */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const { natsServer } = ensureSystemPackages();
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-report-'));
const stack = await startStack({ dataDir, natsServer, quiet: true, env: {} });
try {
  const gatewayPid = stack.services.get('gateway').pid;
  const { key, call } = newTenant(stack, 'Bench report', 1_000_000);
  const project = await call('POST', '/api/v2/projects', { name: 'OSHA records' });
  step('ingesting the OSHA 101 PDF');
  const id = await uploadDocument(call, { fileName: path.basename(PDF), contentType: 'application/pdf', bytes: readFileSync(PDF), projectId: project.id });
  await processDocuments(call, [id]);

  const n = Number(values.requirements);
  step(`a ${n}-requirement run with skip_breakdown, checked to completed`);
  const requirements = Array.from({ length: n }, (_, i) => ({ text: `${TEXTS[i % TEXTS.length]} (clause ${i + 1})`, metadata: { ref: `R-${i + 1}` } }));
  const run = await call('POST', '/api/v2/check/runs', { project_id: project.id, name: 'bench report', requirements });
  const t0 = Date.now();
  await call('POST', `/api/v2/check/runs/${run.id}/trigger`, { skip_breakdown: true });
  const detail = await waitForRunEnd(call, run.id);
  if (detail.status !== 'completed') throw new Error(`run ended ${detail.status}: ${detail.error_message}`);
  const checkMs = Date.now() - t0;
  await call('PUT', `/api/v2/check/runs/${run.id}/requirements/${detail.requirements[0].id}/review`, {
    decision: 'fail',
    reviewer: 'Bench reviewer',
    comment: 'Checked by hand.',
  });

  /** One GET read to its end: wall ms, bytes, gateway RSS before and peak during (MB). */
  const measureGet = async (p) => {
    const before = memory(gatewayPid);
    const peakReset = resetPeak(gatewayPid);
    const start = process.hrtime.bigint();
    const res = await fetch(`${stack.baseUrl}${p}`, { headers: { Authorization: `Bearer ${key}` } });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (res.status !== 200) throw new Error(`GET ${p}: ${res.status} ${body.toString('utf8').slice(0, 300)}`);
    const after = memory(gatewayPid);
    return { ms, bytes: body.length, rssBefore: before.rss, peak: peakReset ? after.hwm : null };
  };
  const repeated = async (p) => {
    const runs = [];
    for (let i = 0; i < Number(values.repeats); i++) runs.push(await measureGet(p));
    const peaks = runs.map((r) => r.peak).filter((x) => x !== null);
    return {
      wall_ms: +median(runs.map((r) => r.ms)).toFixed(1),
      bytes: runs[0].bytes,
      gateway_rss_before_mb: +median(runs.map((r) => r.rssBefore)).toFixed(1),
      gateway_peak_rss_mb: peaks.length ? +Math.max(...peaks).toFixed(1) : null,
    };
  };

  step('reading the requirements (baseline) and each report format');
  await measureGet(`/api/v2/check/runs/${run.id}/requirements`); // warm-up (JIT, connections)
  const baseline = await repeated(`/api/v2/check/runs/${run.id}/requirements`);
  const formats = {};
  for (const format of ['xlsx', 'csv', 'pdf']) {
    await measureGet(`/api/v2/check/runs/${run.id}/report?format=${format}`); // warm-up
    const m = await repeated(`/api/v2/check/runs/${run.id}/report?format=${format}`);
    formats[format] = { ...m, ratio_to_requirements_read: +(m.wall_ms / baseline.wall_ms).toFixed(2) };
  }
  const result = {
    run: {
      requirements: n,
      status: detail.status,
      passed: detail.passed_requirements,
      failed: detail.failed_requirements,
      trigger_to_completed_ms: checkMs,
      document: path.basename(PDF),
    },
    repeats: Number(values.repeats),
    baseline_requirements_json: { ...baseline, note: 'GET /api/v2/check/runs/{id}/requirements (every requirement as JSON), same stack, same run' },
    reports: formats,
    note: 'wall_ms: median of the repeats, the body read to its end; gateway_peak_rss_mb: VmHWM of the gateway process after the request, reset (clear_refs 5) before it',
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
