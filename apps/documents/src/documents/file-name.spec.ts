import { downloadFileName, fileNameProblem } from './documents.service';

describe('fileNameProblem (reservation rule for file_name)', () => {
  it('accepts ordinary names in any script, with spaces, quotes and punctuation', () => {
    for (const name of ['handbook.pdf', ' Prüfbericht "Q3"; 日本語 – résumé .txt', 'a', 'x'.repeat(500), 'emoji 📄.md'])
      expect(fileNameProblem(name)).toBeNull();
  });

  it('refuses empty, too long and blank names', () => {
    expect(fileNameProblem('')).toMatch(/1 to 500/);
    expect(fileNameProblem('x'.repeat(501))).toMatch(/1 to 500/);
    for (const name of [' ', '   ', '\u00a0 ']) expect(fileNameProblem(name)).toMatch(/blank/);
  });

  it('refuses control characters, NUL included, with a message about control characters', () => {
    for (const name of ['a\r\nb.pdf', 'a\nb', 'tab\t.pdf', 'nul\u0000.pdf', 'bell\u0007', 'del\u007f', 'c1\u0085', 'c1\u009f']) {
      expect(fileNameProblem(name)).toMatch(/control characters/);
    }
  });

  it('refuses path separators', () => {
    for (const name of ['dir/a.pdf', 'dir\\a.pdf']) expect(fileNameProblem(name)).toMatch(/path separators/);
  });
});

describe('downloadFileName (names stored before the rule)', () => {
  it('keeps accepted names, replaces control characters and names blank ones', () => {
    expect(downloadFileName('Prüfbericht 日本語.pdf')).toBe('Prüfbericht 日本語.pdf');
    expect(downloadFileName('a\r\nb.pdf')).toBe('a__b.pdf');
    expect(downloadFileName('  ')).toBe('download');
  });
});
