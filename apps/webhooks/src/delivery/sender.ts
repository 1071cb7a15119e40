import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { DestinationRefusedError, guardedLookup, isPublicAddress } from '../endpoints/url-policy';

/** The result of one delivery attempt. */
export interface AttemptResult {
  /** A 2xx answer within the timeout. */
  ok: boolean;
  /** HTTP status of the answer, null when there was none (refused, network error, timeout). */
  responseStatus: number | null;
  /** Why the attempt failed, in words for the delivery log; null on success. */
  error: string | null;
}

/** Most bytes of a response body read (and discarded) before the connection is closed. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * Sends one webhook by the Standard Webhooks specification (standardwebhooks.com): POST of the
 * JSON body with `webhook-id` (the event id, the same on every attempt), `webhook-timestamp` (Unix
 * seconds of this attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` made by the `standardwebhooks` package with the endpoint's secret).
 *
 * Success is a 2xx answer within `timeoutMs` (the whole exchange: connect, headers, body).
 * Redirects are never followed (a 3xx is a failure naming the Location). Unless `allowPrivate`,
 * the destination's addresses are checked when the socket connects (IP literal directly, names by
 * a guarded DNS lookup), so a name that now resolves to a private address is refused.
 * Never throws: every failure is an {@link AttemptResult} with its reason.
 */
export async function sendWebhook(input: {
  url: string;
  secret: string;
  eventId: string;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  userAgent?: string;
}): Promise<AttemptResult> {
  const url = new URL(input.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!input.allowPrivate && isIP(host) && !isPublicAddress(host)) {
    return { ok: false, responseStatus: null, error: `refused: ${host} is a loopback, link-local or private address (WEBHOOK_ALLOW_PRIVATE is not set)` };
  }
  const timestamp = new Date();
  const signature = new Webhook(input.secret).sign(input.eventId, timestamp, input.body);
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(input.body)),
    'user-agent': input.userAgent ?? 'kb-platform-webhooks/1',
    'webhook-id': input.eventId,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': signature,
  };
  const client = url.protocol === 'https:' ? https : http;
  const signal = AbortSignal.timeout(input.timeoutMs);
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const done = (r: AttemptResult) => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    const req = client.request(url, { method: 'POST', headers, signal, lookup: guardedLookup(input.allowPrivate), agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) res.destroy();
      });
      const finish = () => {
        if (status >= 200 && status < 300) done({ ok: true, responseStatus: status, error: null });
        else if (status >= 300 && status < 400)
          done({ ok: false, responseStatus: status, error: `redirect to ${String(res.headers.location ?? '(no Location)').slice(0, 200)} not followed` });
        else done({ ok: false, responseStatus: status, error: `HTTP ${status}` });
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', () => finish());
    });
    req.on('error', (err: Error & { code?: string }) => {
      if (signal.aborted) return done({ ok: false, responseStatus: null, error: `no answer within ${input.timeoutMs} ms` });
      if (err instanceof DestinationRefusedError) return done({ ok: false, responseStatus: null, error: `refused: ${err.message}` });
      done({ ok: false, responseStatus: null, error: `${err.code ?? 'error'}: ${err.message}`.slice(0, 500) });
    });
    req.end(input.body);
  });
}
