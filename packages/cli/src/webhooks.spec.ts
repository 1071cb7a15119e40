import { parseHeaderFile } from './webhooks';

describe('kb webhooks verify: header files', () => {
  const expected = { 'webhook-id': 'evt_1', 'webhook-timestamp': '1764000000', 'webhook-signature': 'v1,abc= v1,def=' };

  it("reads a JSON object (Node's req.headers), lower-casing names and joining repeated values", () => {
    expect(parseHeaderFile(JSON.stringify({ 'Webhook-Id': 'evt_1', 'webhook-timestamp': 1764000000, 'webhook-signature': ['v1,abc=', 'v1,def='] }))).toEqual(
      expected,
    );
  });

  it('reads "Name: value" lines and a raw HTTP request dump (request line skipped, body ignored)', () => {
    const lines = 'Webhook-Id: evt_1\nwebhook-timestamp:1764000000\r\nwebhook-signature:   v1,abc= v1,def=\n';
    expect(parseHeaderFile(lines)).toEqual(expected);
    const dump = `POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.replace(/\n/g, '\r\n')}\r\n{"id":"evt_1","note":"a: colon"}`;
    expect(parseHeaderFile(dump)).toEqual({ host: '127.0.0.1', ...expected });
  });

  it('refuses a line that is not a header, naming it', () => {
    expect(() => parseHeaderFile('webhook-id evt_1\n')).toThrow('not a header line: webhook-id evt_1');
  });
});
