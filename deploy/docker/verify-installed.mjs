#!/usr/bin/env node
// Image build guard: every package npm put in node_modules must be in the lockfile with the same
// version. The image installs with `npm install` (not `npm ci`: the lockfile lacks the non-Linux
// optional platform packages, which npm ci's sync check rejects; see tools/lib/bootstrap.mjs),
// so this check gives back npm ci's guarantee that the image runs exactly the locked versions.
//
//   node verify-installed.mjs <original package-lock.json> [node_modules dir] [--arch x64|arm64]
//
// --arch arm64: a package the lockfile does not list is also accepted when it is the arm64 build of
// a locked linux-x64 package at the same version (for example @img/sharp-linux-arm64 beside the
// locked @img/sharp-linux-x64), because the lockfile records only linux-x64's native packages.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const archAt = args.indexOf('--arch');
const arch = archAt >= 0 ? args.splice(archAt, 2)[1] : 'x64';
const [lockPath, nodeModules = 'node_modules'] = args;
if (!lockPath) {
  console.error('usage: verify-installed.mjs <package-lock.json> [node_modules]');
  process.exit(2);
}
const locked = JSON.parse(readFileSync(lockPath, 'utf8')).packages ?? {};
const installed = JSON.parse(readFileSync(path.join(nodeModules, '.package-lock.json'), 'utf8')).packages ?? {};
const problems = [];
let count = 0;
for (const [key, pkg] of Object.entries(installed)) {
  if (!key.startsWith('node_modules/')) continue;
  count++;
  // The x64 sibling of an arm64 native package, e.g. node_modules/@lancedb/lancedb-linux-x64-gnu.
  const sibling = arch !== 'x64' && key.includes(`-linux-${arch}`) ? locked[key.replace(`-linux-${arch}`, '-linux-x64')] : undefined;
  const want = locked[key] ?? sibling;
  if (!want) problems.push(`${key}@${pkg.version}: not in the lockfile`);
  else if (want.version !== pkg.version) problems.push(`${key}: installed ${pkg.version}, locked ${want.version}`);
}
if (count === 0) problems.push('no packages installed');
if (problems.length) {
  console.error(`verify-installed: node_modules does not match ${lockPath}:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`verify-installed: ${count} packages, all at their locked versions`);
