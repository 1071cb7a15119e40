// A tenant for scripts that drive a running stack (benchmarks, evaluations): an organization and
// an API key created with kbctl, and a caller that unwraps the JSON envelope.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './bootstrap.mjs';

/**
 * Runs kbctl (the built CLI) against the stack's database and NATS; returns its JSON output.
 * @param {{ databaseUrl: string, env?: { NATS_URL?: string } }} stack as returned by startStack
 * @throws Error (kbctl's exit status) when the command fails
 */
export function kbctlFor(stack, ...args) {
  const env = { ...process.env, DATABASE_URL: stack.databaseUrl, ...(stack.env?.NATS_URL ? { NATS_URL: stack.env.NATS_URL } : {}) };
  return JSON.parse(execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), ...args, '--json'], { env, encoding: 'utf8' }));
}

/**
 * Creates an organization named `name` with one API key of `rateLimit` requests per minute.
 * `call(method, path, body)` sends JSON with the key and returns `data`.
 * @returns {{ org: { id: string }, key: string, call: (method: string, path: string, body?: unknown) => Promise<any> }}
 * @throws Error `"<METHOD> <path>: <status> <error>"` from `call` when the API answers with an error envelope
 */
export function newTenant(stack, name, rateLimit = 100000) {
  const org = kbctlFor(stack, 'org', 'create', '--name', name);
  const key = kbctlFor(stack, 'key', 'create', '--org', org.id, '--rate-limit', String(rateLimit)).key;
  const call = async (method, p, body) => {
    const res = await fetch(`${stack.baseUrl}${p}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const json = await res.json();
    if (!json.success) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json.error)}`);
    return json.data;
  };
  return { org, key, call };
}
