#!/usr/bin/env node
// Publishes the public npm packages of the monorepo at a release's version:
// `node tools/release/npm.mjs --version 1.2.3 [--publish]`. Every packages/*/package.json without
// `"private": true` is published with npm provenance (`npm publish --provenance --access public`,
// needs NODE_AUTH_TOKEN and, for provenance, a CI with an OIDC token); without --publish it runs
// `npm publish --dry-run` so the contents can be checked. The version is written into each
// package.json first (the tag is the single source of versions). The packages are npm workspaces of
// the root (`npm publish -w packages/<name>` from the root), published dependencies first (the SDK
// before the CLI that depends on it, so the registry never holds a CLI whose SDK version is not yet
// there). A pre-release version (X.Y.Z-rc.1) is published under the dist-tag `next`, not `latest`.
// Exits 1 when a publish fails.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { values: opts } = parseArgs({ options: { version: { type: 'string' }, publish: { type: 'boolean', default: false } } });
if (!opts.version || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(opts.version)) {
  console.error('usage: npm.mjs --version X.Y.Z[-pre] [--publish]');
  process.exit(2);
}
const base = path.join(ROOT, 'packages');
const dirs = existsSync(base)
  ? readdirSync(base)
      .map((d) => path.join(base, d))
      .filter((d) => existsSync(path.join(d, 'package.json')))
  : [];
const manifest = (d) => JSON.parse(readFileSync(path.join(d, 'package.json'), 'utf8'));
const targets = dependenciesFirst(dirs.filter((d) => manifest(d).private !== true));
if (targets.length === 0) {
  console.log('npm.mjs: no public package under packages/ — nothing to publish');
  process.exit(0);
}
let failed = 0;
// One version for all: a package that depends on another of ours (the CLI on the SDK) gets it too.
const ours = new Set(targets.map((d) => manifest(d).name));
for (const dir of targets) {
  const file = path.join(dir, 'package.json');
  const pkg = JSON.parse(readFileSync(file, 'utf8'));
  pkg.version = opts.version;
  for (const name of Object.keys(pkg.dependencies ?? {})) if (ours.has(name)) pkg.dependencies[name] = opts.version;
  writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
  // npm refuses a pre-release (1.2.3-rc.1) without a dist-tag, so that `npm install <name>` (the
  // `latest` tag) never picks one: pre-releases go to `next`.
  const tag = opts.version.includes('-') ? ['--tag', 'next'] : [];
  const args = ['publish', '--access', 'public', ...tag, ...(opts.publish ? ['--provenance'] : ['--dry-run'])];
  console.log(`npm.mjs: ${pkg.name}@${opts.version}: npm ${args.join(' ')} --workspace ${path.relative(ROOT, dir)}`);
  const r = spawnSync('npm', [...args, '--workspace', path.relative(ROOT, dir)], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);

/**
 * The package folders ordered so that each comes after the ones of this list it depends on
 * (`dependencies` naming another's package name); otherwise in the given order.
 * @param {string[]} list package folders (absolute paths)
 * @returns {string[]}
 * @throws Error when two packages depend on each other (no order publishes them safely)
 */
function dependenciesFirst(list) {
  const byName = new Map(list.map((d) => [manifest(d).name, d]));
  const out = [];
  const visiting = new Set();
  const visit = (d) => {
    if (out.includes(d)) return;
    if (visiting.has(d)) throw new Error(`npm.mjs: packages depend on each other through ${manifest(d).name}`);
    visiting.add(d);
    for (const dep of Object.keys(manifest(d).dependencies ?? {})) if (byName.has(dep)) visit(byName.get(dep));
    visiting.delete(d);
    out.push(d);
  };
  list.forEach(visit);
  return out;
}
