import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendWebhook } from '../../../apps/webhooks/src/delivery/sender';
import { newSigningSecret } from '../../../apps/webhooks/src/endpoints/secrets';
import { KbWebhookVerificationError, verifyWebhook } from './webhooks';

/** A delivery as the receiver got it: raw body and Node's headers. */
interface Received {
  body: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * Signs and sends `body` with the webhooks service's own sender (the `standardwebhooks` signing
 * of apps/webhooks) to a receiver on 127.0.0.1, and returns what the receiver got.
 */
async function deliver(secret: string, eventId: string, body: string): Promise<Received> {
  let received: Received | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received = { body: Buffer.concat(chunks).toString('utf8'), headers: req.headers };
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const result = await sendWebhook({ url: `http://127.0.0.1:${port}/hooks`, secret, eventId, body, timeoutMs: 10_000, allowPrivate: true });
    expect(result).toEqual({ ok: true, responseStatus: 204, error: null });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  return received!;
}

const reasonOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(KbWebhookVerificationError);
    return (error as KbWebhookVerificationError).reason;
  }
  throw new Error('verified, expected a refusal');
};

describe('verifyWebhook (SDK) against deliveries signed by the webhooks service', () => {
  const secret = newSigningSecret();
  const event = {
    id: '5b0c1f5e-6a5e-4b47-9d63-4a1f2f0e8c11',
    type: 'document.completed',
    created_at: '2026-11-24T01:02:03.456Z',
    org_id: 'org-1',
    data: { id: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d', status: 'completed', chunk_count: 42, file_name: 'Ünïcode “quotes”.pdf' },
  };
  let delivery: Received;

  beforeAll(async () => {
    delivery = await deliver(secret, event.id, JSON.stringify(event));
  });
  afterEach(() => jest.useRealTimers());

  it('returns the typed event of a genuine delivery (Node headers, fetch Headers, raw bytes)', () => {
    const verified = verifyWebhook(delivery.body, delivery.headers, secret);
    expect(verified).toEqual(event);
    expect(verified.type === 'document.completed' && verified.data.chunk_count).toBe(42);
    const headers = new Headers();
    for (const [k, v] of Object.entries(delivery.headers)) if (typeof v === 'string') headers.set(k, v);
    expect(verifyWebhook(Buffer.from(delivery.body, 'utf8'), headers, secret).id).toBe(event.id);
  });

  it('refuses an altered body, another secret, a missing header and a forged signature', () => {
    expect(reasonOf(() => verifyWebhook(delivery.body.replace('"completed"', '"failed"'), delivery.headers, secret))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(JSON.stringify(JSON.parse(delivery.body), null, 2), delivery.headers, secret))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(delivery.body, delivery.headers, newSigningSecret()))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(delivery.body, { ...delivery.headers, 'webhook-id': 'another-id' }, secret))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(delivery.body, { ...delivery.headers, 'webhook-signature': undefined }, secret))).toBe('missing_headers');
    expect(reasonOf(() => verifyWebhook(delivery.body, { ...delivery.headers, 'webhook-signature': 'v1,AAAA' }, secret))).toBe('bad_signature');
  });

  it('refuses a delivery replayed after 5 minutes unless told to ignore the timestamp (debugging)', () => {
    jest.useFakeTimers({ now: Date.now() + 6 * 60_000 });
    expect(reasonOf(() => verifyWebhook(delivery.body, delivery.headers, secret))).toBe('timestamp_too_old');
    expect(verifyWebhook(delivery.body, delivery.headers, secret, { ignoreTimestamp: true })).toEqual(event);
    // Skipping the timestamp check does not skip the signature.
    expect(reasonOf(() => verifyWebhook(delivery.body.replace('42', '43'), delivery.headers, secret, { ignoreTimestamp: true }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(delivery.body, delivery.headers, newSigningSecret(), { ignoreTimestamp: true }))).toBe('bad_signature');
  });

  it('refuses a correctly signed body that is not an event', async () => {
    const notJson = await deliver(secret, 'evt-2', 'not json');
    expect(reasonOf(() => verifyWebhook(notJson.body, notJson.headers, secret))).toBe('bad_payload');
    const notEvent = await deliver(secret, 'evt-3', '{"hello":"world"}');
    expect(reasonOf(() => verifyWebhook(notEvent.body, notEvent.headers, secret))).toBe('bad_payload');
  });
});
