#!/usr/bin/env node
// schemathesis (PyPI, pinned) in a Python venv of the per-machine cache
// (~/.cache/kb-platform/venv-schemathesis-<version>, or $KB_TOOLS_CACHE/…): created and filled by
// pip once, then reused. `node tools/lib/schemathesis.mjs ensure` prints the path of its
// `schemathesis` command (exit 0), or the reason it is unavailable on stderr (exit 2 when PyPI
// cannot be reached, 1 on any other failure). Used by test/e2e/schemathesis.e2e-spec.ts.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureVenv, reportEnsure } from './python-venv.mjs';

/** The pinned version (the one of the issue-15 probe's 4.32 line). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/**
 * The `schemathesis` command of the cached venv (tools/lib/python-venv.mjs), installed on first use.
 * @returns {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}}
 */
export function ensureSchemathesis() {
  const r = ensureVenv(`schemathesis-${SCHEMATHESIS_VERSION}`, [`schemathesis==${SCHEMATHESIS_VERSION}`], ['schemathesis']);
  return r.ok ? { ok: true, bin: path.join(r.bin, 'schemathesis') } : r;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'ensure') {
  reportEnsure(ensureSchemathesis(), (bin) => bin);
}
