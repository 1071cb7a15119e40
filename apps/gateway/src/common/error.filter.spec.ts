import { AppError, ErrorCode } from '@kb/common';
import { toHttpError } from './error.filter';

describe('toHttpError', () => {
  it('marks every 500 as unexpected so the gateway logs it, including INTERNAL_ERROR relayed from a service', () => {
    expect(toHttpError(AppError.internal(), 'GET', '/api/v2/projects')).toMatchObject({ status: 500, code: 'INTERNAL_ERROR', unexpected: true });
    expect(toHttpError(new Error('boom'), 'GET', '/api/v2/projects')).toMatchObject({ status: 500, unexpected: true });
  });

  it('does not log client errors or expected service states as unexpected', () => {
    for (const code of [ErrorCode.VALIDATION_ERROR, ErrorCode.NOT_FOUND, ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.TIMEOUT]) {
      expect(toHttpError(new AppError(code, 'x'), 'GET', '/').unexpected).toBe(false);
    }
  });
});
