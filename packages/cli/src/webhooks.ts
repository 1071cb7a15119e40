import { readFile } from 'node:fs/promises';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  KbWebhookVerificationError,
  listWebhookDeliveries,
  listWebhooks,
  retryWebhookDelivery,
  updateWebhook,
  verifyWebhook,
  type KbClient,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '@kb-platform/sdk';
import { Command, Option } from 'commander';
import { UsageError } from './exit-codes';
import { int, list } from './options';
import { clip, printJson, printRows, table } from './output';

type Opts = { json?: boolean } & Record<string, any>;
type Leaf = (parent: Command, spec: string, description: string, action: (kb: KbClient, args: any[], opts: Opts) => Promise<void>) => Command;

const endpointTable = () => table(['webhook id', 'url', 'events', 'enabled', 'description', 'created'], [38, 'flex', 'flex', 9, 'flex', 26]);
const endpointRow = (w: WebhookEndpoint) => [w.id, w.url, w.events.join(', '), w.enabled ? 'yes' : 'paused', w.description ?? '', w.created_at];
const deliveryTable = () =>
  table(['delivery id', 'event', 'status', 'tries', 'http', 'last attempt (UTC)', 'last error / next attempt'], [38, 21, 11, 7, 6, 21, 'flex']);
/** `2026-11-24 04:29:08` of an ISO time (UTC), or empty. */
const when = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').slice(0, 19) : '');
const deliveryRow = (d: WebhookDelivery) => [
  d.id,
  d.event,
  d.status,
  String(d.attempts),
  d.response_status == null ? '' : String(d.response_status),
  when(d.last_attempt_at),
  [clip(d.last_error ?? '', 200), d.status === 'pending' && d.next_attempt_at ? `next: ${when(d.next_attempt_at)}` : ''].filter(Boolean).join('\n'),
];

/** Reads a file, or stdin for "-", as raw bytes (a payload must be verified byte for byte). */
async function readInput(file: string): Promise<Buffer> {
  if (file !== '-') return readFile(file);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Headers of a captured delivery from a file: a JSON object (`{"webhook-id": "…", …}`, as Node's
 * `req.headers`), or HTTP header lines `Name: value` (a request line and anything after the first
 * blank line are ignored, so a raw HTTP request dump works too).
 * @throws Error when the file holds neither.
 */
export function parseHeaderFile(text: string): Record<string, string> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    const parsed = JSON.parse(trimmed) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(' ') : String(v)]));
  }
  const headers: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+$/, '');
    if (line.trim() === '') {
      if (Object.keys(headers).length) break;
      continue;
    }
    const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(.*)$/.exec(line);
    if (match) headers[match[1].toLowerCase()] = match[2].trim();
    else if (!/^[A-Z]+ \S+ HTTP\/\d/.test(line)) throw new Error(`not a header line: ${clip(line, 80)}`);
  }
  return headers;
}

/**
 * `kb webhooks …`: endpoints (create, list, get, update, delete), their delivery log and retries
 * through the API, and `verify` (offline: checks a captured delivery with the endpoint's secret).
 */
export function webhooksCommands(program: Command, leaf: Leaf, fail: (error: unknown, json: boolean | undefined) => void): void {
  const webhooks = program
    .command('webhooks')
    .description('webhook endpoints: create, list, get, update, delete, the delivery log and retries; verify a captured delivery');

  leaf(webhooks, 'create <url>', 'register an endpoint; prints its id and its signing secret (shown this once)', async (kb, [url], o) => {
    const created = await createWebhook(kb, { url, events: o.events, ...(o.description !== undefined ? { description: o.description } : {}) });
    printRows(o, created, [created], endpointTable, endpointRow, `secret (shown this once; keep it to verify deliveries): ${created.secret}\n`);
  })
    .requiredOption(
      '-e, --events <types>',
      'event types, comma-separated (repeatable), or "*" for all: document.ready, document.completed, document.failed, document.deleted, check_run.completed, check_run.failed, check_run.stopped, batch.completed, batch.failed, check_run.requirement_reviewed',
      list,
    )
    .option('-d, --description <text>', 'description (max 500 characters)');

  leaf(webhooks, 'list', "the organization's endpoints, newest first (without secrets)", async (kb, _a, o) => {
    const page = await listWebhooks(kb, { limit: o.limit, offset: o.offset });
    printRows(
      o,
      page,
      page.data,
      endpointTable,
      endpointRow,
      `${page.data.length} of ${page.pagination.total} endpoint(s) (offset ${page.pagination.offset})\n`,
    );
  })
    .option('--limit <n>', 'page size (max 200)', int, 50)
    .option('--offset <n>', 'results to skip', int, 0);

  leaf(webhooks, 'get <id>', 'one endpoint', async (kb, [id], o) => {
    const w = await getWebhook(kb, id);
    printRows(o, w, [w], endpointTable, endpointRow);
  });

  leaf(webhooks, 'update <id>', 'change the URL, events or description, or pause/resume deliveries', async (kb, [id], o) => {
    const changes: { url?: string; events?: string[]; description?: string | null; enabled?: boolean } = {};
    if (o.url !== undefined) changes.url = o.url;
    if (o.events !== undefined) changes.events = o.events;
    if (o.description !== undefined) changes.description = o.description;
    if (o.clearDescription) changes.description = null;
    if (o.enable) changes.enabled = true;
    if (o.disable) changes.enabled = false;
    if (Object.keys(changes).length === 0)
      throw new UsageError('nothing to change: give --url, --events, --description, --clear-description, --enable or --disable');
    const w = await updateWebhook(kb, id, changes as Parameters<typeof updateWebhook>[2]);
    printRows(o, w, [w], endpointTable, endpointRow);
  })
    .option('-u, --url <url>', 'new URL')
    .option('-e, --events <types>', 'new event types (comma-separated, repeatable; "*" for all)', list)
    .option('-d, --description <text>', 'new description')
    .option('--clear-description', 'remove the description')
    .addOption(new Option('--enable', 'resume deliveries').conflicts('disable'))
    .addOption(new Option('--disable', 'pause deliveries (they wait, and are sent once re-enabled)').conflicts('enable'));

  leaf(webhooks, 'delete <id>', 'delete an endpoint and its delivery log', async (kb, [id], o) => {
    await deleteWebhook(kb, id);
    if (o.json) return printJson({ deleted: id });
    process.stdout.write(`deleted webhook ${id}\n`);
  });

  leaf(webhooks, 'deliveries <id>', "an endpoint's delivery log, newest first (status, attempts, last answer, last error)", async (kb, [id], o) => {
    const page = await listWebhookDeliveries(kb, id, { limit: o.limit, offset: o.offset });
    printRows(
      o,
      page,
      page.data,
      deliveryTable,
      deliveryRow,
      `${page.data.length} of ${page.pagination.total} deliver${page.pagination.total === 1 ? 'y' : 'ies'} (offset ${page.pagination.offset})\n`,
    );
  })
    .option('--limit <n>', 'page size (max 200)', int, 50)
    .option('--offset <n>', 'results to skip', int, 0);

  leaf(webhooks, 'retry <id> <delivery-id>', 'send a delivery again now (pending, with a fresh 24 h retry window)', async (kb, [id, deliveryId], o) => {
    const d = await retryWebhookDelivery(kb, id, deliveryId);
    printRows(o, d, [d], deliveryTable, deliveryRow);
  });

  // `verify` needs no API key: it checks a captured delivery offline.
  webhooks
    .command('verify [payload]')
    .description(
      'check a captured delivery (the raw body from a file, or stdin with "-" or no argument) with the endpoint\'s secret, as a receiver must (Standard Webhooks); prints the event, exit 1 when it does not verify',
    )
    .option(
      '-H, --header <name:value>',
      'a request header (repeatable): webhook-id, webhook-timestamp, webhook-signature',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--headers <file>', 'the request headers from a file: a JSON object, or "Name: value" lines (a raw HTTP request dump works)')
    .addOption(new Option('--secret <whsec>', 'the endpoint secret (default: KB_WEBHOOK_SECRET)').env('KB_WEBHOOK_SECRET'))
    .option('--ignore-timestamp', 'accept a delivery older than 5 minutes (debugging a captured request; the signature is still checked)')
    .option('--json', 'print one JSON document on stdout (for scripts)')
    .action(async (payloadFile: string | undefined, o: Opts) => {
      try {
        if (!o.secret) throw new Error('No secret: set KB_WEBHOOK_SECRET or pass --secret (the whsec_… shown when the endpoint was created).');
        const headers: Record<string, string> = o.headers ? parseHeaderFile(await readFile(o.headers, 'utf8')) : {};
        for (const h of (o.header as string[] | undefined) ?? []) {
          const at = h.indexOf(':');
          if (at <= 0) throw new UsageError(`--header takes name:value, got ${clip(h, 60)}`);
          headers[h.slice(0, at).trim().toLowerCase()] = h.slice(at + 1).trim();
        }
        const payload = await readInput(payloadFile ?? '-');
        let event;
        try {
          event = verifyWebhook(payload, headers, o.secret, { ignoreTimestamp: !!o.ignoreTimestamp });
        } catch (error) {
          if (!(error instanceof KbWebhookVerificationError)) throw error;
          if (o.json) printJson({ valid: false, reason: error.reason, message: error.message });
          else process.stderr.write(`kb: webhook does not verify (${error.reason}): ${error.message}\n`);
          process.exitCode = 1;
          return;
        }
        if (o.json) return printJson({ valid: true, event });
        const data = event.data as { id?: string; status?: string };
        process.stdout.write(
          `✔ valid ${event.type} (event ${event.id}, ${event.created_at})${data.id ? `: ${data.id}${data.status ? ` ${data.status}` : ''}` : ''}\n`,
        );
      } catch (error) {
        fail(error, o.json);
      }
    });
}
