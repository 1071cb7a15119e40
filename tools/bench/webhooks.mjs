#!/usr/bin/env node
// `npm run bench:webhooks`: webhook deliveries per second to a local receiver, and the delay from
// a state change to its delivery (p50, p95), idle and under a load of 1,000 documents.
//
// The whole stack is started (as `npm start` does, in a temporary data folder; BM25 only,
// EMBEDDINGS_PROVIDER=none, so the load is the platform's own work, not the embedding model) with a
// receiver on 127.0.0.1 that answers 204 at once and records when each request arrived. One
// endpoint subscribes to every event. The delay of a delivery is its arrival time minus the event's
// `created_at` (the time of the state change, written in the same transaction): outbox relay,
// JetStream, fan-out, dispatcher and HTTP together.
//
//   idle      one document at a time: reserve, delete (document.deleted), wait for its delivery;
//             `--idle N` times. The same-run baseline of the delay.
//   load      `--documents N` (1,000) small Markdown documents reserved, uploaded and processed
//             (100 ids per call, `--concurrency` uploads in flight): every document gives
//             document.ready and document.completed. Delay of those 2,000 deliveries under load.
//   burst     the N documents deleted (100 per call) as fast as the API takes it: N document.deleted
//             events; deliveries/s = N / (last arrival - first delete sent), bounded by how fast
//             the deletions are made (deletes_sent_in_ms says how long that took).
//   drain     the N delivered burst events put back to `pending`, due now, in one statement (what N
//             manual retries at once do): a backlog of N deliveries; deliveries/s = N / (last
//             arrival - the statement): the dispatcher and the HTTP path alone.
//   raw       the same receiver, signed POSTs sent directly from this process with
//             WEBHOOK_CONCURRENCY (16) in flight: the same-run baseline of deliveries/s (what the
//             HTTP path alone allows on this machine).
// Prints one JSON object; ratios: drain deliveries/s over raw POSTs/s, load delay over idle delay.
//
// Usage: npm run bench:webhooks [-- --documents N --idle N --concurrency N]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, step } from '../lib/bootstrap.mjs';
import { newTenant } from '../lib/api-client.mjs';
import { percentile, pool } from '../lib/measure.mjs';
import { startStack } from '../lib/stack.mjs';

const require = createRequire(import.meta.url);
const { Webhook } = require('standardwebhooks');

const { values } = parseArgs({
  options: {
    documents: { type: 'string', default: '1000' },
    idle: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '16' },
  },
});
const N = Math.max(1, Number(values.documents));
const IDLE = Math.max(1, Number(values.idle));
const CONCURRENCY = Math.max(1, Number(values.concurrency));
const WEBHOOK_CONCURRENCY = 16;
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const stats = (xs) => ({ n: xs.length, p50_ms: round(percentile(xs, 50)), p95_ms: round(percentile(xs, 95)), max_ms: round(Math.max(...xs)) });

// The receiver: 204 at once; arrival time per request.
const arrivals = []; // { at, id, type, resource, createdAt, path }
const waiters = new Set();
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    res.writeHead(204).end();
    if (req.url === '/raw') return arrivals.push({ at, path: '/raw' });
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    arrivals.push({ at, path: req.url, id: event.id, type: event.type, resource: event.data.id, createdAt: Date.parse(event.created_at) });
    for (const w of waiters) w();
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}`;
const waitUntil = (pred, timeoutMs, what) =>
  new Promise((resolve, reject) => {
    const check = () => {
      if (pred()) {
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      }
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    waiters.add(check);
    check();
  });

const { natsServer } = ensureSystemPackages();
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-webhooks-'));
step(`starting the stack in ${dataDir}`);
const stack = await startStack({ dataDir, natsServer, quiet: true, env: { LOG_LEVEL: 'warn', EMBEDDINGS_PROVIDER: 'none', WEBHOOK_POLL_INTERVAL_MS: '100' } });
const result = { documents: N, machine: { cpus: os.cpus().length, node: process.version } };
try {
  const tenant = newTenant(stack, 'Webhooks bench');
  const endpoint = await tenant.call('POST', '/api/v2/webhooks', { url: `${receiverUrl}/hooks`, events: ['*'] });

  // raw: signed POSTs straight to the receiver (the HTTP path alone).
  step('raw: signed POSTs to the receiver');
  const wh = new Webhook(endpoint.secret);
  const body = JSON.stringify({ id: randomUUID(), type: 'document.deleted', created_at: new Date().toISOString(), org_id: tenant.org.id, data: {} });
  const rawStart = performance.now();
  await pool(Array.from({ length: N }), WEBHOOK_CONCURRENCY, async () => {
    const id = randomUUID();
    const ts = new Date();
    const res = await fetch(`${receiverUrl}/raw`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(ts / 1000)),
        'webhook-signature': wh.sign(id, ts, body),
      },
      body,
    });
    await res.arrayBuffer();
  });
  const rawPerSecond = N / ((performance.now() - rawStart) / 1000);

  // idle: one state change at a time.
  step(`idle: ${IDLE} deletions one at a time`);
  const idleDelays = [];
  for (let i = 0; i < IDLE; i++) {
    const doc = await tenant.call('POST', '/api/v2/documents', { file_name: `idle-${i}.md`, content_type: 'text/markdown', size_bytes: 10 });
    await tenant.call('DELETE', '/api/v2/documents', { document_ids: [doc.id] });
    await waitUntil(() => arrivals.some((a) => a.resource === doc.id), 60_000, `idle delivery ${i}`);
    const a = arrivals.find((x) => x.resource === doc.id);
    idleDelays.push(a.at - a.createdAt);
  }

  // load: N documents processed.
  step(`load: ${N} documents reserved, uploaded and processed`);
  const ids = [];
  const loadStart = Date.now();
  const pending = [];
  const flush = async (force) => {
    while (pending.length >= 100 || (force && pending.length > 0)) {
      const batch = pending.splice(0, 100);
      await tenant.call('POST', '/api/v2/documents/process', { document_ids: batch });
    }
  };
  await pool(
    Array.from({ length: N }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      const text = `# Site rule ${i}\n\nVisitors must sign in at the reception desk before entering zone ${i}. Hard hats are required.\n`;
      const bytes = Buffer.from(text);
      const doc = await tenant.call('POST', '/api/v2/documents', { file_name: `doc-${i}.md`, content_type: 'text/markdown', size_bytes: bytes.length });
      const put = await fetch(doc.upload.url, { method: 'PUT', headers: { 'Content-Type': doc.upload.recommended_content_type }, body: bytes });
      if (put.status !== 200) throw new Error(`upload ${i}: ${put.status}`);
      ids.push(doc.id);
      pending.push(doc.id);
      await flush(false);
    },
  );
  await flush(true);
  const mine = new Set(ids);
  const completedOf = () => arrivals.filter((a) => a.type === 'document.completed' && mine.has(a.resource)).length;
  await waitUntil(() => completedOf() >= N, 900_000, `${N} document.completed deliveries`);
  const loadEvents = arrivals.filter((a) => mine.has(a.resource) && (a.type === 'document.ready' || a.type === 'document.completed'));
  const loadSeconds = (Math.max(...loadEvents.map((a) => a.at)) - loadStart) / 1000;

  // burst: N deletions at once.
  step(`burst: ${N} deletions`);
  const burstStart = Date.now();
  for (let i = 0; i < ids.length; i += 100) await tenant.call('DELETE', '/api/v2/documents', { document_ids: ids.slice(i, i + 100) });
  const deletesSentMs = Date.now() - burstStart;
  const deletedOf = () => arrivals.filter((a) => a.type === 'document.deleted' && mine.has(a.resource));
  await waitUntil(() => deletedOf().length >= N, 900_000, `${N} document.deleted deliveries`);
  const burst = deletedOf();
  const burstSeconds = (Math.max(...burst.map((a) => a.at)) - burstStart) / 1000;
  const burstPerSecond = N / burstSeconds;

  // Where the delay goes, from the delivery log (webhooks schema): state change → fan-out (outbox
  // relay, JetStream, fan-out insert), fan-out → attempt (dispatcher), attempt → arrival (HTTP).
  const pg = new (require('pg').Client)({ connectionString: stack.databaseUrl });
  await pg.connect();
  const burstIds = new Set(burst.map((a) => a.id));
  const rows = (
    await pg.query(
      `SELECT event_id::text AS id, (payload->>'created_at')::timestamptz AS changed, created_at AS fanned, last_attempt_at AS attempted
       FROM webhooks.webhook_deliveries WHERE endpoint_id = $1`,
      [endpoint.id],
    )
  ).rows;
  // drain: the N burst deliveries due again at once.
  step(`drain: ${N} deliveries due at once`);
  const before = arrivals.length;
  const drainStart = Date.now();
  await pg.query(`UPDATE webhooks.webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE endpoint_id = $1 AND event_id = ANY($2::uuid[])`, [
    endpoint.id,
    [...burstIds],
  ]);
  await waitUntil(() => arrivals.length - before >= N, 900_000, `${N} drained deliveries`);
  const drained = arrivals.slice(before);
  const drainSeconds = (Math.max(...drained.map((a) => a.at)) - drainStart) / 1000;
  await pg.end();
  // First arrival of each event (the drain sends the burst events again).
  const arrivalOf = new Map();
  for (const a of arrivals) if (a.id && !arrivalOf.has(a.id)) arrivalOf.set(a.id, a.at);
  const part = (xs) => ({ p50_ms: round(percentile(xs, 50)), p95_ms: round(percentile(xs, 95)) });
  const breakdown = (ids) => {
    const rs = rows.filter((r) => ids.has(r.id) && arrivalOf.has(r.id));
    return {
      change_to_fanout: part(rs.map((r) => r.fanned - r.changed)),
      fanout_to_attempt: part(rs.map((r) => r.attempted - r.fanned)),
      attempt_to_arrival: part(rs.map((r) => arrivalOf.get(r.id) - r.attempted)),
    };
  };
  const idleStats = stats(idleDelays);
  const loadStats = stats(loadEvents.map((a) => a.at - a.createdAt));
  const burstStats = stats(burst.map((a) => a.at - a.createdAt));
  Object.assign(result, {
    raw_posts_per_second: round(rawPerSecond),
    burst: {
      deliveries: N,
      deletes_sent_in_ms: deletesSentMs,
      seconds: round(burstSeconds, 2),
      deliveries_per_second: round(burstPerSecond),
      delay: burstStats,
      breakdown: breakdown(burstIds),
    },
    drain: { deliveries: N, seconds: round(drainSeconds, 2), deliveries_per_second: round(N / drainSeconds) },
    ratio_drain_to_raw: round(N / drainSeconds / rawPerSecond, 3),
    ratio_burst_to_raw: round(burstPerSecond / rawPerSecond, 3),
    idle_delay: idleStats,
    load: {
      documents: N,
      seconds: round(loadSeconds, 1),
      deliveries: loadEvents.length,
      delay: loadStats,
      breakdown: breakdown(new Set(loadEvents.map((a) => a.id))),
    },
    ratio_load_to_idle_p50: round(loadStats.p50_ms / idleStats.p50_ms, 2),
    ratio_load_to_idle_p95: round(loadStats.p95_ms / idleStats.p95_ms, 2),
    // Every event arrived exactly once before the drain (at least once allows more; none expected without failures).
    duplicate_deliveries:
      arrivals.slice(0, before).filter((a) => a.id).length -
      new Set(
        arrivals
          .slice(0, before)
          .filter((a) => a.id)
          .map((a) => a.id),
      ).size,
    settings: { WEBHOOK_OUTBOX_INTERVAL_MS: 250, WEBHOOK_CONCURRENCY: WEBHOOK_CONCURRENCY, WEBHOOK_POLL_INTERVAL_MS: 100, EMBEDDINGS_PROVIDER: 'none' },
  });
} finally {
  await stack.stop();
  receiver.closeAllConnections();
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result, null, 2));
