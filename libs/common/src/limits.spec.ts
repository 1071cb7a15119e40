import { AppError, ErrorCode } from './errors';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_OFFSET_MAX, pageWindow } from './limits';

function codeOf(fn: () => unknown): ErrorCode | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof AppError ? e.code : undefined;
  }
  return undefined;
}

describe('pageWindow (one page rule for every list endpoint)', () => {
  it('reads an unset limit (proto3 0) as the default and an unset offset as 0', () => {
    expect(pageWindow(undefined)).toEqual({ limit: PAGE_LIMIT_DEFAULT, offset: 0 });
    expect(pageWindow({ limit: 0, offset: 0 })).toEqual({ limit: 50, offset: 0 });
    expect(pageWindow({ limit: PAGE_LIMIT_MAX, offset: PAGE_OFFSET_MAX })).toEqual({ limit: 200, offset: 2_147_483_647 });
  });

  it('answers VALIDATION_ERROR for an out-of-range limit or offset instead of clamping it', () => {
    expect(codeOf(() => pageWindow({ limit: 201 }))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(codeOf(() => pageWindow({ limit: -1 }))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(codeOf(() => pageWindow({ limit: 1.5 }))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(codeOf(() => pageWindow({ limit: 10, offset: -1 }))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(codeOf(() => pageWindow({ limit: 10, offset: PAGE_OFFSET_MAX + 1 }))).toBe(ErrorCode.VALIDATION_ERROR);
  });
});
