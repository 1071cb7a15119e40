#!/usr/bin/env node
// openapi-python-client and mypy (PyPI, pinned) in a Python venv of the per-machine cache
// (~/.cache/kb-platform/venv-openapi-python-client-<version>, or $KB_TOOLS_CACHE/…): created and
// filled by pip once, then reused, as tools/lib/schemathesis.mjs does for schemathesis. The second
// client generator of the OpenAPI document (the SDK uses openapi-typescript): test/tools/openapi-clients.spec.ts
// generates a Python client with it and type-checks it with `mypy --strict`.
// `node tools/lib/openapi-python-client.mjs ensure` prints the venv's bin folder (exit 0), or the
// reason it is unavailable on stderr (exit 2 when PyPI cannot be reached, 1 on any other failure).
import { fileURLToPath } from 'node:url';
import { ensureVenv, reportEnsure } from './python-venv.mjs';

/** The pinned versions (the latest releases when the check was added). */
export const OPENAPI_PYTHON_CLIENT_VERSION = '0.29.1';
export const MYPY_VERSION = '2.4.1';

/**
 * The bin folder of the cached venv (holding `openapi-python-client`, `mypy` and `python`), installed on first use.
 * @returns {{ok: true, bin: string} | {ok: false, unreachable: boolean, reason: string}}
 */
export function ensureOpenapiPythonClient() {
  return ensureVenv(
    `openapi-python-client-${OPENAPI_PYTHON_CLIENT_VERSION}-mypy-${MYPY_VERSION}`,
    [`openapi-python-client==${OPENAPI_PYTHON_CLIENT_VERSION}`, `mypy==${MYPY_VERSION}`],
    ['openapi-python-client', 'mypy'],
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'ensure') {
  reportEnsure(ensureOpenapiPythonClient(), (bin) => bin);
}
