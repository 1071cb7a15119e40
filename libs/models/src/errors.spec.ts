import { AppError, ErrorCode } from '@kb/common';
import { ModelProviderError, providerAppError } from './errors';
import { addUsage, NO_USAGE, sumUsage } from './usage';

describe('providerAppError', () => {
  const messages = { unavailable: 'down', timeout: 'slow' };

  it('maps a provider timeout to TIMEOUT and other failures to SERVICE_UNAVAILABLE', () => {
    const timeout = providerAppError(new ModelProviderError('t', true, null, 'timeout'), messages) as AppError;
    expect([timeout.code, timeout.message]).toEqual([ErrorCode.TIMEOUT, 'slow']);
    const http = providerAppError(new ModelProviderError('h', false, 401, 'http'), messages) as AppError;
    expect([http.code, http.message]).toEqual([ErrorCode.SERVICE_UNAVAILABLE, 'down']);
  });

  it('keeps a timeout SERVICE_UNAVAILABLE when the service gives no timeout message, and can quote the provider', () => {
    const mapped = providerAppError(new ModelProviderError('no answer', true, null, 'timeout'), { unavailable: (e) => `gone: ${e.message}` }) as AppError;
    expect([mapped.code, mapped.message]).toEqual([ErrorCode.SERVICE_UNAVAILABLE, 'gone: no answer']);
  });

  it('returns any other error unchanged', () => {
    const own = new AppError(ErrorCode.NOT_FOUND, 'x');
    const bug = new TypeError('y');
    expect(providerAppError(own, messages)).toBe(own);
    expect(providerAppError(bug, messages)).toBe(bug);
  });
});

describe('token usage sums', () => {
  it('adds field by field', () => {
    const a = { promptTokens: 10, completionTokens: 2, totalTokens: 12 };
    const b = { promptTokens: 5, completionTokens: 7, totalTokens: 13 };
    expect(addUsage(a, b)).toEqual({ promptTokens: 15, completionTokens: 9, totalTokens: 25 });
    expect(sumUsage([a, b, a])).toEqual({ promptTokens: 25, completionTokens: 11, totalTokens: 37 });
    expect(sumUsage([])).toEqual(NO_USAGE);
  });
});
