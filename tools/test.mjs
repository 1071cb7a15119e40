#!/usr/bin/env node
// `npm test`: sets up what is missing (npm dependencies, system packages, MinIO for the S3 driver
// tests), builds, then runs the unit suite and the end-to-end suite (the whole stack as separate
// processes, driven over HTTP with documents from ../shared/corpus). Extra arguments go to Jest.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { build, ensureNodeModules, ensureSystemPackages, ROOT, step } from './lib/bootstrap.mjs';

ensureNodeModules();
ensureSystemPackages();
if (!process.env.KB_SKIP_MINIO && !process.env.KB_MINIO_BIN) {
  step('ensuring a MinIO server binary for the S3 storage tests (built once, then cached)');
  const r = spawnSync('bash', [path.join(ROOT, 'tools/minio.sh'), 'ensure'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write('Could not build MinIO (see above). Set KB_SKIP_MINIO=1 to skip the S3 driver tests.\n');
    process.exit(1);
  }
  process.env.KB_MINIO_BIN = r.stdout.trim().split('\n').pop();
}
build();
const jest = path.join(ROOT, 'node_modules/.bin/jest');
const extra = process.argv.slice(2);
for (const project of ['unit', 'e2e']) {
  step(`running the ${project} tests`);
  const r = spawnSync(jest, ['--selectProjects', project, ...(project === 'e2e' ? ['--runInBand'] : []), ...extra], { cwd: ROOT, stdio: 'inherit', env: process.env });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
