#!/usr/bin/env node
// Packages the Helm chart for a release: `node tools/release/chart.mjs --version 1.2.3
// --registry ghcr.io/OWNER [--out dist-chart]` writes <out>/kb-platform-1.2.3.tgz whose
// Chart.yaml `version` and `appVersion` are the release's, and whose values default to the
// released images <registry>/kb-platform and <registry>/kb-platform-ingestion (tag = appVersion).
// The repository's chart is left untouched (a copy is edited, comments kept). Needs `helm` on PATH
// or HELM_BIN. Used by .github/workflows/release.yml; tested in test/deploy.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { values: opts } = parseArgs({ options: { version: { type: 'string' }, registry: { type: 'string' }, out: { type: 'string', default: 'dist-chart' } } });
if (!opts.version || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(opts.version)) {
  console.error('usage: chart.mjs --version X.Y.Z[-pre] --registry REGISTRY/OWNER [--out DIR] (the version must be SemVer 2, as Helm requires)');
  process.exit(2);
}
if (!opts.registry) {
  console.error('chart.mjs: --registry is required (e.g. ghcr.io/OWNER)');
  process.exit(2);
}

const work = mkdtempSync(path.join(os.tmpdir(), 'kb-chart-'));
try {
  const chartDir = path.join(work, 'kb-platform');
  cpSync(path.join(ROOT, 'helm/kb-platform'), chartDir, { recursive: true });
  const edit = (file, change) => {
    const doc = YAML.parseDocument(readFileSync(path.join(chartDir, file), 'utf8'));
    change(doc);
    writeFileSync(path.join(chartDir, file), doc.toString());
  };
  edit('Chart.yaml', (doc) => {
    doc.set('version', opts.version);
    doc.set('appVersion', opts.version);
  });
  const registry = opts.registry.replace(/\/+$/, '');
  edit('values.yaml', (doc) => {
    doc.setIn(['image', 'repository'], `${registry}/kb-platform`);
    doc.setIn(['ingestion', 'image', 'repository'], `${registry}/kb-platform-ingestion`);
  });
  const out = path.resolve(opts.out);
  mkdirSync(out, { recursive: true });
  const helm = process.env.HELM_BIN ?? 'helm';
  const r = spawnSync(helm, ['package', chartDir, '--destination', out], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
} finally {
  rmSync(work, { recursive: true, force: true });
}
