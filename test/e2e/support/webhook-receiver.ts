import http from 'node:http';
import { AddressInfo } from 'node:net';

/** One request a test receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Parsed body (the event). */
  event: any;
}

/**
 * A real HTTP receiver for webhook tests on 127.0.0.1: records every request, and answers with
 * what `respond(request, nthForThisEventAtThisPath)` returns: a status code, or 'hang' (never
 * answered; the connection stays open until the receiver closes).
 */
export async function startReceiver(respond: (r: ReceivedWebhook, nth: number) => number | 'hang' = () => 200) {
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: any = null;
      try {
        event = JSON.parse(body);
      } catch {}
      const r: ReceivedWebhook = { path: req.url ?? '', headers: req.headers as Record<string, string>, body, event };
      received.push(r);
      const nth = received.filter((x) => x.path === r.path && x.headers['webhook-id'] === r.headers['webhook-id']).length;
      const answer = respond(r, nth);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (p: string) => `http://127.0.0.1:${port}${p}`,
    received,
    /** Requests to `path`. */
    at: (p: string) => received.filter((r) => r.path === p),
    /** Waits until `pred` holds over the requests (polls every 50 ms), up to `timeoutMs`. */
    async waitFor(pred: (all: ReceivedWebhook[]) => boolean, timeoutMs = 120_000, what = 'webhooks'): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(received)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received: ${received.map((r) => `${r.path} ${r.event?.type}`).join(', ')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close(): Promise<void> {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
