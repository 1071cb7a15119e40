#!/usr/bin/env node
// `npm run lint`: the format check, then ESLint (tools/lib/lint.mjs); `-- --fix` fixes what ESLint
// can and formats. `npm run format`: Prettier writes (`node tools/lint.mjs --format`). Run the build
// (`npm run build`) once first: the type-checked rules read the generated sources.
import { format, lint } from './lib/lint.mjs';

const args = process.argv.slice(2);
if (args.includes('--format')) process.exit(format({ write: true }) ? 0 : 1);
const fix = args.includes('--fix');
const formatted = format({ write: fix });
const linted = lint({ fix, extra: args.filter((a) => a !== '--fix') });
process.exit(formatted && linted ? 0 : 1);
