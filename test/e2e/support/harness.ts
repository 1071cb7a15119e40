import { ChildProcess, execFileSync, spawn, type StdioOptions } from 'node:child_process';
import net from 'node:net';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { CONTENT_TYPE_BY_EXTENSION } from '@kb/common';

export const ROOT = path.resolve(__dirname, '../../..');

/** Node major of CI's first line (tools/lib/node-runtime.mjs FIRST_LINE_NODE): .ci/run runs `npm test` on Node 24 LTS, then again on Node 22 (the oldest supported), which runs only a few e2e suites (tools/test.mjs SECOND_LINE_E2E). */
export const FIRST_LINE_NODE = 24;

/** The shared corpus of real documents (../shared/corpus beside the repo). */
export const CORPUS = path.resolve(ROOT, '../shared/corpus');

export function baseUrl(): string {
  const url = process.env.KB_E2E_BASE_URL;
  if (!url) throw new Error('KB_E2E_BASE_URL is not set: run the e2e suite through `npm test` (global setup starts the stack).');
  return url;
}

/** Runs the real operator CLI against the stack's database; returns its JSON output. */
export function kbctl(...args: string[]): any {
  return kbctlAt(process.env.KB_E2E_DATABASE_URL!, ...args);
}

/** kbctl against a given database (for a second stack). */
export function kbctlAt(databaseUrl: string, ...args: string[]): any {
  // NATS_URL: kbctl announces key revocations and quota changes to the gateways through NATS.
  const nats = databaseUrl === process.env.KB_E2E_DATABASE_URL ? { NATS_URL: process.env.KB_E2E_NATS_URL ?? '' } : {};
  const out = execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), ...args, '--json'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ...nats },
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

/**
 * A fresh organization with one API key (on the suite's stack, or the stack of `databaseUrl`).
 * The key allows `rateLimit` requests per minute (default 6000: tests poll every 300 ms, faster
 * than the product default of 100/min that gateway-limits.e2e-spec.ts checks).
 */
export function newOrg(name: string, opts: { safety?: boolean; databaseUrl?: string; rateLimit?: number } = {}): { orgId: string; key: string } {
  const db = opts.databaseUrl ?? process.env.KB_E2E_DATABASE_URL!;
  const org = kbctlAt(db, 'org', 'create', '--name', name, ...(opts.safety ? ['--safety'] : []));
  const key = kbctlAt(db, 'key', 'create', '--org', org.id, '--name', `${name} key`, '--rate-limit', String(opts.rateLimit ?? 6000));
  return { orgId: org.id, key: key.key };
}

/** supertest agent bound to the gateway (of this suite's stack unless `url` is given) with a bearer key. */
export function api(key: string, url: string = baseUrl()) {
  const agent = request(url);
  const auth = (r: request.Test) => r.set('Authorization', `Bearer ${key}`);
  return {
    get: (p: string) => auth(agent.get(p)),
    post: (p: string) => auth(agent.post(p)),
    put: (p: string) => auth(agent.put(p)),
    patch: (p: string) => auth(agent.patch(p)),
    delete: (p: string) => auth(agent.delete(p)),
  };
}

/** Content types by file extension (the service's accepted upload types). */
export const CONTENT_TYPES = CONTENT_TYPE_BY_EXTENSION;

/** The suite stack's own description (`<KB_E2E_DATA_DIR>/stack.json`, written by the global setup): its database URL and each service's port. */
export function suiteStack(): { databaseUrl: string; ports: Record<string, number> } {
  return JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'stack.json'), 'utf8'));
}

/** The gRPC addresses of the suite stack's services (`host:port`), under the names of the gateway's settings. */
export function suiteGrpcUrls(stack = suiteStack()) {
  return {
    DOCUMENTS_GRPC_URL: `127.0.0.1:${stack.ports.documents}`,
    INGESTION_GRPC_URL: `127.0.0.1:${stack.ports.ingestion}`,
    RETRIEVAL_GRPC_URL: `127.0.0.1:${stack.ports.retrieval}`,
    CHECK_GRPC_URL: `127.0.0.1:${stack.ports.check}`,
    AGENT_GRPC_URL: `127.0.0.1:${stack.ports.agent}`,
    WEBHOOKS_GRPC_URL: `127.0.0.1:${stack.ports.webhooks}`,
  };
}

/**
 * Spawns a further gateway process (the built `dist/apps/gateway/src/main.js`) on a free port of
 * 127.0.0.1, against the suite's PostgreSQL and NATS and its local object storage (folder and
 * signing secret of the global setup); `env` adds or replaces settings. It does not wait for the
 * gateway to be ready.
 * @returns the child process and the gateway's base URL.
 */
export async function spawnGateway(env: NodeJS.ProcessEnv, stdio: StdioOptions): Promise<{ child: ChildProcess; url: string }> {
  const dataDir = process.env.KB_E2E_DATA_DIR!;
  const secrets = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'));
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/main.js')], {
    cwd: ROOT,
    stdio,
    env: {
      ...process.env,
      DATABASE_URL: suiteStack().databaseUrl,
      NATS_URL: process.env.KB_E2E_NATS_URL,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      STORAGE_DRIVER: 'local',
      STORAGE_LOCAL_DIR: path.join(dataDir, 'objects'),
      STORAGE_SIGNING_SECRET: secrets.storageSigningSecret,
      ...env,
    },
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/**
 * Reserves a slot (as the next version of `file.replaces` when set), PUTs the bytes to the presigned URL (no
 * bearer header), and returns the document id.
 */
export async function uploadFile(
  key: string,
  file: { path?: string; bytes?: Buffer; name?: string; contentType?: string; replaces?: string },
  projectId?: string,
  url: string = baseUrl(),
): Promise<string> {
  const bytes = file.bytes ?? readFileSync(file.path!);
  const name = file.name ?? path.basename(file.path!);
  const contentType = file.contentType ?? CONTENT_TYPES[path.extname(name)];
  const res = await api(key, url)
    .post('/api/v2/documents')
    .send({
      file_name: name,
      content_type: contentType,
      size_bytes: bytes.length,
      ...(projectId ? { project_id: projectId } : {}),
      ...(file.replaces ? { replaces: file.replaces } : {}),
    });
  if (res.status !== 201) throw new Error(`reserve failed: ${res.status} ${JSON.stringify(res.body)}`);
  const put = await fetch(res.body.data.upload.url, { method: 'PUT', headers: { 'Content-Type': res.body.data.upload.recommended_content_type }, body: bytes });
  if (put.status !== 200) throw new Error(`upload failed: ${put.status} ${await put.text()}`);
  return res.body.data.id;
}

/** Creates a project named `name` in the key's organization and returns its id; throws when the gateway does not answer 201. */
export async function createProject(key: string, name: string, url: string = baseUrl()): Promise<string> {
  const res = await api(key, url).post('/api/v2/projects').send({ name });
  if (res.status !== 201) throw new Error(`project create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

/** Two fresh organizations, `<name> A` and `<name> B` (see {@link newOrg}), with a client for each: for isolation checks. */
export function twoOrgs(name: string) {
  const orgA = newOrg(`${name} A`);
  const orgB = newOrg(`${name} B`);
  return { orgA, orgB, a: api(orgA.key), b: api(orgB.key) };
}

/**
 * Starts the processing of the uploaded documents `ids` (POST /api/v2/documents/process, answer not
 * checked), waits for each with {@link waitForDocument} (`timeoutMs` each) and expects each `completed`.
 * @returns the documents, in the order of `ids`.
 */
export async function processDocuments(key: string, ids: string[], timeoutMs = 120_000, url: string = baseUrl()): Promise<any[]> {
  await api(key, url).post('/api/v2/documents/process').send({ document_ids: ids });
  const docs: any[] = [];
  for (const id of ids) {
    const doc = await waitForDocument(key, id, timeoutMs, url);
    expect(doc.status).toBe('completed');
    docs.push(doc);
  }
  return docs;
}

/** Polls a document until it leaves `processing` (or `timeoutMs` passes); returns it. */
export async function waitForDocument(key: string, id: string, timeoutMs = 120_000, url: string = baseUrl()): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(key, url).get(`/api/v2/documents/${id}`);
    const doc = res.body.data;
    if (doc && ['completed', 'failed'].includes(doc.status)) return doc;
    if (Date.now() > deadline) throw new Error(`document ${id} still ${doc?.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/**
 * Polls a check run until its status is one of `statuses` (a 503 while a restarted check service comes
 * back is waited out); returns the run detail.
 * @throws when `timeoutMs` passes first, naming the status and the progress.
 */
export async function waitForRun(
  key: string,
  id: string,
  statuses: string[] = ['completed', 'failed', 'stopped'],
  timeoutMs = 300_000,
  url: string = baseUrl(),
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(key, url).get(`/api/v2/check/runs/${id}`);
    if (res.status === 503) {
      await new Promise((r) => setTimeout(r, 300));
      continue;
    }
    if (res.status !== 200) throw new Error(`GET run ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (statuses.includes(res.body.data.status)) return res.body.data;
    if (Date.now() > deadline)
      throw new Error(`run ${id} still ${res.body.data.status} (${res.body.data.processed_requirements}/${res.body.data.total_requirements})`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** One JSON line of a service's log (pino): `msg` plus whatever fields the line carries. */
export type LogLine = { msg: string; time?: string; document_id?: string; attempt?: number; gap_ms?: number; [field: string]: unknown };

/** Size in bytes of the shared stack's log of `service` (`<KB_E2E_DATA_DIR>/logs/<service>.log`): pass it to {@link serviceLog} to read only what follows. */
export function serviceLogSize(service: string): number {
  return statSync(path.join(process.env.KB_E2E_DATA_DIR!, 'logs', `${service}.log`)).size;
}

/**
 * The JSON lines of the shared stack's log of `service` from byte `from` on (other suites fill the
 * log: reading only the tail keeps polling cheap). Non-JSON lines are skipped.
 */
export function serviceLog(service: string, from = 0): LogLine[] {
  return readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'logs', `${service}.log`))
    .subarray(from)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/**
 * Takeover pauses of a fault case: for each item (document, requirement) the start times (ms) of its runs; a
 * run that starts again after a kill was interrupted by it (the first kill between its two starts), and the
 * pause is that kill → the next start. Every restart must have a kill before it (else the work ran twice).
 * @returns the pauses (ms) and how many items each kill interrupted.
 */
export function takeoversAfterKills(startsPerItem: number[][], kills: { at: number }[]): { takeovers: number[]; perKill: number[] } {
  const takeovers: number[] = [];
  const perKill = kills.map(() => 0);
  for (const starts of startsPerItem) {
    for (let i = 1; i < starts.length; i++) {
      const k = kills.findIndex((kill) => kill.at >= starts[i - 1] && kill.at <= starts[i]);
      expect(k).toBeGreaterThanOrEqual(0);
      perKill[k]++;
      takeovers.push(starts[i] - kills[k].at);
    }
  }
  return { takeovers, perKill };
}

export function corpusFile(rel: string): string {
  const p = path.join(CORPUS, rel);
  statSync(p);
  return p;
}

/** A second, separately configured stack (its own PostgreSQL, NATS and six services). */
export interface ExtraStack {
  baseUrl: string;
  databaseUrl: string;
  /** The stack-cli process (tests that need its pid or exit). */
  process: ChildProcess;
  /** SIGTERM, then waits until every process of the stack has exited. */
  stop(): Promise<void>;
}

/** `KB_MODELS_DIR` and `EMBEDDINGS_MODEL` of the e2e stack (the real MiniLM of ../shared/models). */
export function e2eEmbeddingsEnv(): Record<string, string> {
  return { KB_MODELS_DIR: process.env.KB_E2E_MODELS_DIR ?? path.resolve(ROOT, '../shared/models'), EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' };
}

/**
 * The environment that points a stack's services at an OpenAI-compatible chat model (README
 * "Chat model": LLM_BASE_URL, LLM_MODEL, LLM_API_KEY, LLM_MAX_RETRIES), for {@link startExtraStack}.
 * @param o.apiKey default `test` (the scripted servers accept any); o.maxRetries default 0 (a scripted failure is seen at once)
 */
export function llmEnv(baseUrl: string, model: string, o: { apiKey?: string; maxRetries?: number } = {}): Record<string, string> {
  return { LLM_BASE_URL: baseUrl, LLM_MODEL: model, LLM_API_KEY: o.apiKey ?? 'test', LLM_MAX_RETRIES: String(o.maxRetries ?? 0) };
}

/**
 * Starts a whole stack in `dataDir` with extra service environment `env` (e.g. `LLM_BASE_URL` of a
 * scripted model server, `STORAGE_DRIVER=s3`) through tools/lib/stack-cli.mjs, for suites that
 * need a configuration the shared e2e stack does not have. `options` go to startStack as they are
 * (e.g. `restart`, the supervisor's backoff policy).
 * @throws Error when the stack exits before it reports ready.
 */
export async function startExtraStack(dataDir: string, env: Record<string, string>, options: Record<string, unknown> = {}): Promise<ExtraStack> {
  const child = spawn(process.execPath, [path.join(ROOT, 'tools/lib/stack-cli.mjs')], {
    // The shared stack's embedding model (global-setup.mjs), unless the suite overrides it.
    env: { ...process.env, KB_STACK_OPTIONS: JSON.stringify({ ...options, dataDir, env: { ...e2eEmbeddingsEnv(), ...env } }) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ready = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('READY '));
      if (line) resolve(line.slice(6));
    });
    child.on('exit', (code) => reject(new Error(`stack exited with ${code}`)));
  });
  const { baseUrl: url, databaseUrl } = JSON.parse(ready) as { baseUrl: string; databaseUrl: string };
  return {
    baseUrl: url,
    databaseUrl,
    process: child,
    stop: () => stopChild(child),
  };
}

/**
 * Stops a child process a test started: SIGTERM, then resolves once it has exited (at once when it
 * already has). The one way the e2e support stops a stack, a model server or a replica.
 */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const handedOutPorts = new Set<number>();

/**
 * A free TCP port for a process a test starts (a second gateway, MinIO, an ingestion replica).
 * Chosen at random below Linux's ephemeral range (32768-60999) and checked by binding it, as
 * tools/lib/stack.mjs does: a port from `listen(0)` is an ephemeral one that any outgoing
 * connection may take before the process binds it.
 * @throws Error when none was found after 200 tries
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * (32767 - 20000 + 1));
    if (handedOutPorts.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.unref();
      srv.once('error', () => resolve(false));
      srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
    });
    if (free) {
      handedOutPorts.add(port);
      return port;
    }
  }
  throw new Error('no free TCP port found in 20000-32767');
}

/**
 * POSTs a streamed chat (`stream: true`) with `key` to the gateway at `url` and parses the SSE
 * reply with eventsource-parser. A reply that is not an event stream (an error before the stream
 * began) comes back as `json`. `abortAfter`: disconnect once an event of that name has arrived.
 */
export async function streamChat(key: string, body: object, opts: { abortAfter?: string } = {}, url: string = baseUrl()) {
  const controller = new AbortController();
  const res = await fetch(`${url}/api/v2/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
    signal: controller.signal,
  });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  if (res.status !== 200 || !res.headers.get('content-type')?.startsWith('text/event-stream')) {
    return { res, events, comments, json: (await res.json()) as any };
  }
  const parser = createParser({ onEvent: (e) => events.push(e), onComment: (c) => comments.push(c) });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (opts.abortAfter && events.some((e) => e.event === opts.abortAfter)) {
        controller.abort();
        break;
      }
    }
  } catch (e) {
    if (!controller.signal.aborted) throw e;
  }
  return { res, events, comments, json: null as any };
}
