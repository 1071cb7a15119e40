import { ErrorCode, HTTP_STATUS_BY_CODE } from '@kb/common';
import { ERROR_CLASS_BY_CODE, KbApiError, retryAfterSeconds } from './errors';

describe('SDK errors', () => {
  it('reads Retry-After as delta-seconds or as an HTTP date (RFC 9110 §10.2.3)', () => {
    expect(retryAfterSeconds(new Headers({ 'Retry-After': '42' }))).toBe(42);
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    expect(retryAfterSeconds(new Headers({ 'Retry-After': inTen }))).toBeGreaterThanOrEqual(9);
    expect(retryAfterSeconds(new Headers({ 'Retry-After': 'soon' }))).toBeNull();
    expect(retryAfterSeconds(new Headers())).toBeNull();
  });

  it('takes code, message and request id from the envelope, and falls back to the status for other bodies', async () => {
    const envelope = new Response(JSON.stringify({ success: false, error: { code: 'RATE_LIMITED', message: 'Wait 3 s.' }, request_id: 'r-1' }), {
      status: 429,
      headers: { 'Retry-After': '3' },
    });
    expect(await KbApiError.fromResponse(envelope)).toMatchObject({
      status: 429,
      code: 'RATE_LIMITED',
      message: 'Wait 3 s.',
      request_id: 'r-1',
      retryAfterSeconds: 3,
    });
    const proxy = new Response('<html>Bad gateway</html>', { status: 502, statusText: 'Bad Gateway', headers: { 'X-Request-Id': 'r-2' } });
    expect(await KbApiError.fromResponse(proxy)).toMatchObject({
      status: 502,
      code: 'HTTP_502',
      request_id: 'r-2',
      message: expect.stringContaining('Bad gateway'),
    });
  });

  it('has a class of its own for every error code the service sends (libs/common ErrorCode), found by its code', () => {
    for (const code of Object.values(ErrorCode)) {
      const status = HTTP_STATUS_BY_CODE[code];
      const byCode = KbApiError.of(status, code, 'm', null);
      expect([code, byCode.constructor === KbApiError]).toEqual([code, false]);
      expect(byCode).toBeInstanceOf(ERROR_CLASS_BY_CODE[code]);
    }
  });
});
