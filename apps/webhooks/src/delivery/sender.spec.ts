import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, SecretBox } from '../endpoints/secrets';
import { checkEndpointUrl, isPublicAddress } from '../endpoints/url-policy';
import { checkEvents } from '../endpoints/webhooks.service';
import { retryDelayMs } from './dispatcher';
import { sendWebhook } from './sender';

/** A real receiver on 127.0.0.1 answering with `status` (and a Location for 3xx). */
async function receiver(status: number | 'hang') {
  const got: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      if (status === 'hang') return;
      res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://169.254.169.254/latest/meta-data' } : {}).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    got,
    port,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const body = JSON.stringify({ id: 'e1', type: 'document.ready', created_at: '2026-01-01T00:00:00.000Z', org_id: 'o', data: { id: 'd' } });

describe('sendWebhook', () => {
  it('signs by Standard Webhooks: the receiver verifies with the secret; a 2xx is success', async () => {
    const r = await receiver(204);
    try {
      const secret = newSigningSecret();
      const result = await sendWebhook({ url: `http://127.0.0.1:${r.port}/in`, secret, eventId: 'msg_1', body, timeoutMs: 5000, allowPrivate: true });
      expect(result).toEqual({ ok: true, responseStatus: 204, error: null });
      expect(r.got).toHaveLength(1);
      const h = r.got[0].headers as Record<string, string>;
      expect(h['webhook-id']).toBe('msg_1');
      expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
      expect(new Webhook(secret).verify(r.got[0].body, h)).toEqual(JSON.parse(body));
      expect(() => new Webhook(newSigningSecret()).verify(r.got[0].body, h)).toThrow();
    } finally {
      await r.close();
    }
  });

  it('refuses loopback and private destinations unless allowed, before anything is sent', async () => {
    const r = await receiver(200);
    try {
      for (const url of [`http://127.0.0.1:${r.port}/x`, `http://localhost:${r.port}/x`, `http://[::ffff:127.0.0.1]:${r.port}/x`]) {
        const result = await sendWebhook({ url, secret: newSigningSecret(), eventId: 'm', body, timeoutMs: 5000, allowPrivate: false });
        expect(result.ok).toBe(false);
        expect(result.responseStatus).toBeNull();
        expect(result.error).toMatch(/^refused: /);
      }
      expect(r.got).toHaveLength(0);
      expect(
        (await sendWebhook({ url: `http://localhost:${r.port}/x`, secret: newSigningSecret(), eventId: 'm', body, timeoutMs: 5000, allowPrivate: true })).ok,
      ).toBe(true);
    } finally {
      await r.close();
    }
  });

  it('never follows a redirect, and fails a non-2xx or a receiver that does not answer in time', async () => {
    const redirect = await receiver(302);
    const error = await receiver(500);
    const hang = await receiver('hang');
    try {
      const send = (port: number, timeoutMs = 5000) =>
        sendWebhook({ url: `http://127.0.0.1:${port}/x`, secret: newSigningSecret(), eventId: 'm', body, timeoutMs, allowPrivate: true });
      expect(await send(redirect.port)).toEqual({ ok: false, responseStatus: 302, error: 'redirect to http://169.254.169.254/latest/meta-data not followed' });
      expect(await send(error.port)).toEqual({ ok: false, responseStatus: 500, error: 'HTTP 500' });
      expect(await send(hang.port, 300)).toEqual({ ok: false, responseStatus: null, error: 'no answer within 300 ms' });
    } finally {
      await Promise.all([redirect.close(), error.close(), hang.close()]);
    }
  });
});

describe('destination rules', () => {
  it('classifies addresses: only public unicast passes', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '::1',
      'fe80::1',
      'fd00::1',
      '0.0.0.0',
      '100.64.0.1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
    ]) {
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
    }
    for (const a of ['93.184.215.14', '2606:4700::6810:85e5', '::ffff:8.8.8.8']) expect([a, isPublicAddress(a)]).toEqual([a, true]);
  });

  it('checks endpoint URLs at creation: scheme, credentials, private hosts', async () => {
    const strict = { allowPrivate: false, allowHttp: false };
    await expect(checkEndpointUrl('http://93.184.215.14/x', strict)).rejects.toThrow('https');
    await expect(checkEndpointUrl('https://10.0.0.5/x', strict)).rejects.toThrow('private');
    await expect(checkEndpointUrl('https://[::1]/x', strict)).rejects.toThrow('private');
    await expect(checkEndpointUrl('https://localhost/x', strict)).rejects.toThrow('resolves to');
    await expect(checkEndpointUrl('https://u:p@93.184.215.14/x', strict)).rejects.toThrow('user name');
    expect(await checkEndpointUrl('https://93.184.215.14/x', strict)).toBe('https://93.184.215.14/x');
    expect(await checkEndpointUrl('http://127.0.0.1:8080/x', { allowPrivate: true, allowHttp: true })).toBe('http://127.0.0.1:8080/x');
  });

  it('checks event lists', () => {
    expect(checkEvents(['document.ready', 'batch.failed', 'document.ready'])).toEqual(['document.ready', 'batch.failed']);
    expect(checkEvents(['*'])).toEqual(['*']);
    expect(() => checkEvents([])).toThrow('1 or more');
    expect(() => checkEvents(['*', 'batch.failed'])).toThrow('cannot be combined');
    expect(() => checkEvents(['document.created'])).toThrow("'document.created' is not an event type");
  });
});

describe('retries and secrets', () => {
  it('backs off exponentially up to the cap, so the default schedule reaches 24 h after 33 retries', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 5000, 3_600_000))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(20, 5000, 3_600_000)).toBe(3_600_000);
    let elapsed = 0;
    let attempts = 1;
    while (elapsed < 24 * 3_600_000) elapsed += retryDelayMs(attempts++, 5000, 3_600_000);
    expect(attempts).toBe(34);
  });

  it('seals secrets at rest with AES-256-GCM: opened with the key, refused with another or when altered', () => {
    const box = new SecretBox('k'.repeat(32));
    const secret = newSigningSecret();
    const sealed = box.seal(secret);
    expect(sealed).not.toContain(secret.slice(6));
    expect(box.open(sealed)).toBe(secret);
    expect(() => new SecretBox('x'.repeat(32)).open(sealed)).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64');
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => new SecretBox('short')).toThrow('32 characters');
  });
});
