#!/usr/bin/env node
// Image build guard: every package npm put in node_modules must be in the lockfile with the same
// version. The image installs with `npm install` (not `npm ci`: the lockfile lacks the non-Linux
// optional platform packages, which npm ci's sync check rejects; see tools/lib/bootstrap.mjs),
// so this check gives back npm ci's guarantee that the image runs exactly the locked versions.
//
//   node verify-installed.mjs <original package-lock.json> [node_modules dir]
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [lockPath, nodeModules = 'node_modules'] = process.argv.slice(2);
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
  const want = locked[key];
  if (!want) problems.push(`${key}@${pkg.version}: not in the lockfile`);
  else if (want.version !== pkg.version) problems.push(`${key}: installed ${pkg.version}, locked ${want.version}`);
}
if (count === 0) problems.push('no packages installed');
if (problems.length) {
  console.error(`verify-installed: node_modules does not match ${lockPath}:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`verify-installed: ${count} packages, all at their locked versions`);
