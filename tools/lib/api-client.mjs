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
  return { org, key, call: apiCaller(stack, key) };
}

/**
 * A caller with an existing API key (e.g. one kept from an earlier run): `call(method, path, body)`
 * sends JSON with the key and returns `data`.
 * @param {{ baseUrl: string }} stack as returned by startStack
 * @param {string} key an API key of the organization
 * @returns {(method: string, path: string, body?: unknown) => Promise<any>}
 * @throws Error `"<METHOD> <path>: <status> <error>"` from the caller when the API answers with an error envelope
 */
export function apiCaller(stack, key) {
  return async (method, p, body) => {
    const res = await fetch(`${stack.baseUrl}${p}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const json = await res.json();
    if (!json.success) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json.error)}`);
    return json.data;
  };
}

/**
 * Reserves a document (POST /api/v2/documents) and uploads `bytes` to its presigned URL.
 * @param {(method: string, path: string, body?: unknown) => Promise<any>} call a tenant's caller (newTenant)
 * @param {{ fileName: string, contentType: string, bytes: Buffer, projectId?: string }} file
 * @returns {Promise<string>} the document id (status `pending` until processed)
 * @throws Error when the API refuses the reservation or the upload is not answered 2xx
 */
export async function uploadDocument(call, { fileName, contentType, bytes, projectId }) {
  const slot = await call('POST', '/api/v2/documents', {
    file_name: fileName,
    content_type: contentType,
    size_bytes: bytes.length,
    ...(projectId ? { project_id: projectId } : {}),
  });
  // The presigned URL names `localhost`; the stack's servers listen on 127.0.0.1 (tools/lib/stack.mjs).
  const headers = { 'Content-Type': slot.upload.recommended_content_type ?? contentType };
  const put = await fetch(slot.upload.url.replace('localhost', '127.0.0.1'), { method: slot.upload.method ?? 'PUT', headers, body: bytes });
  await put.arrayBuffer();
  if (!put.ok) throw new Error(`upload of ${fileName} failed: ${put.status}`);
  return slot.id;
}

/**
 * Requests processing of `ids` and polls each until it is `completed`.
 * @param {(method: string, path: string, body?: unknown) => Promise<any>} call a tenant's caller (newTenant)
 * @param {string[]} ids document ids (one process call per 100, the API's limit)
 * @param {number} [intervalMs] polling interval
 * @returns {Promise<any[]>} the completed documents, in the order of `ids`
 * @throws Error with the file name and error message when a document fails
 */
export async function processDocuments(call, ids, intervalMs = 250) {
  for (let i = 0; i < ids.length; i += 100) await call('POST', '/api/v2/documents/process', { document_ids: ids.slice(i, i + 100) });
  const docs = [];
  for (const id of ids) {
    const d = await pollUntil(call, `/api/v2/documents/${id}`, (x) => x.status === 'completed' || x.status === 'failed', intervalMs);
    if (d.status === 'failed') throw new Error(`${d.file_name} failed: ${d.error_message}`);
    docs.push(d);
  }
  return docs;
}

/**
 * Polls `GET urlPath` every `intervalMs` until `done(body)` holds; returns that body.
 * @param {(method: string, path: string, body?: unknown) => Promise<any>} call an {@link apiCaller}
 * @param {string} urlPath e.g. `/api/v2/check/runs/{id}`
 * @param {(body: any) => boolean} done
 * @param {number} [intervalMs]
 */
export async function pollUntil(call, urlPath, done, intervalMs = 500) {
  for (;;) {
    const body = await call('GET', urlPath);
    if (done(body)) return body;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Waits until check run `id` has ended (`completed`, `failed` or `stopped`); returns its detail (with requirements).
 * @param {(method: string, path: string, body?: unknown) => Promise<any>} call an {@link apiCaller}
 * @param {string} id
 * @param {number} [intervalMs]
 */
export function waitForRunEnd(call, id, intervalMs = 500) {
  return pollUntil(call, `/api/v2/check/runs/${id}`, (d) => ['completed', 'failed', 'stopped'].includes(d.status), intervalMs);
}
