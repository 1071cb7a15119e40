import ExcelJS from 'exceljs';
import { parseCsv, sniffDelimiter } from './csv';
import { columnLetter, guessColumns, MAX_REQUIREMENTS, normalizeRows, readingProblem, requirementsFromRows, rowsOfWorksheet } from './requirements-table';

const SCAFFOLD = 'Scaffolds must be inspected by a competent person before each shift.';
const VPN = 'VPN sessions must be disconnected after 30 minutes of inactivity.';

describe('requirements from a table', () => {
  it('names columns as spreadsheets do', () => {
    expect([0, 1, 25, 26, 27, 701, 702].map(columnLetter)).toEqual(['A', 'B', 'Z', 'AA', 'AB', 'ZZ', 'AAA']);
  });

  it('parses CSV with RFC 4180 quoting, a BOM, CRLF and blank lines; rows padded to the widest', () => {
    const csv = '\uFEFFRef,Requirement\r\nAC-1,"Passwords, at least 12 characters"\r\n\r\nAC-2,"He said ""no""\nthen left"\r\nAC-3\r\n';
    expect(parseCsv(csv)).toEqual([
      ['Ref', 'Requirement'],
      ['AC-1', 'Passwords, at least 12 characters'],
      ['AC-2', 'He said "no"\nthen left'],
      ['AC-3', ''],
    ]);
  });

  it('finds the delimiter: semicolons of a spreadsheet saved in a decimal-comma locale, tabs, a one-column file', () => {
    expect(sniffDelimiter('Nr;Anforderung\n1;Helme sind zu tragen, immer.\n')).toBe(';');
    expect(sniffDelimiter('"a;b",c,d\n')).toBe(',');
    expect(sniffDelimiter('id\ttext\n')).toBe('\t');
    expect(sniffDelimiter(`${SCAFFOLD}\n${VPN}\n`)).toBe(',');
    expect(parseCsv('Nr;Anforderung\n1;Helme sind zu tragen, immer.\n')).toEqual([
      ['Nr', 'Anforderung'],
      ['1', 'Helme sind zu tragen, immer.'],
    ]);
  });

  it('refuses malformed CSV with the parser’s message', () => {
    expect(() => parseCsv('a,"b\nc,d')).toThrow(/quote/i);
  });

  it('reads an XLSX sheet as Excel shows it: numbers, formulas, rich text, dates; blank rows dropped', async () => {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Requirements');
    ws.addRow(['No.', 'Requirement', 'Due']);
    ws.addRow([1, SCAFFOLD, new Date(Date.UTC(2026, 0, 31))]);
    ws.addRow([]);
    ws.addRow([{ formula: '1+1', result: 2 }, { richText: [{ text: 'VPN sessions ' }, { text: 'must be disconnected', font: { bold: true } }] }]);
    const loaded = new ExcelJS.Workbook();
    await loaded.xlsx.load(await wb.xlsx.writeBuffer());
    expect(rowsOfWorksheet(loaded.getWorksheet('Requirements')!)).toEqual([
      ['No.', 'Requirement', 'Due'],
      ['1', SCAFFOLD, '2026-01-31'],
      ['2', 'VPN sessions must be disconnected', ''],
    ]);
  });

  it('guesses a named header, the requirement column and the reference column', () => {
    const rows = normalizeRows([
      ['Clause', 'Requirement text', 'Owner'],
      ['4.1', SCAFFOLD, 'Site'],
      ['4.2', VPN, 'IT'],
    ]);
    expect(guessColumns(rows)).toEqual({ hasHeader: true, textColumn: 1, refColumn: 0, titleColumn: null });
  });

  it('guesses a title column by its header only, before the requirement and reference names', () => {
    const rows = normalizeRows([
      ['Control', 'Control name', 'Requirement'],
      ['A.8.13', 'Information backup', 'Backup copies of information shall be maintained and regularly tested.'],
      ['A.8.15', 'Logging', 'Logs that record activities shall be produced, stored, protected and analysed.'],
    ]);
    expect(guessColumns(rows)).toEqual({ hasHeader: true, textColumn: 2, refColumn: 0, titleColumn: 1 });
    // "Requirement title" names titles, not texts; "Titre" in French.
    expect(
      guessColumns([
        ['Requirement title', 'Texte'],
        ['Visitors', SCAFFOLD],
      ]),
    ).toEqual({ hasHeader: true, textColumn: 1, refColumn: null, titleColumn: 0 });
    expect(
      guessColumns([
        ['Titre', 'Exigence'],
        ['Visiteurs', VPN],
      ]).titleColumn,
    ).toBe(0);
    // Short distinct values without a title header are a reference, not a title.
    expect(
      guessColumns([
        ['Automatic logoff', VPN],
        ['Scaffolds', SCAFFOLD],
      ]).titleColumn,
    ).toBeNull();
  });

  it('guesses a header without known words from short cells above long texts, and none above more texts', () => {
    expect(
      guessColumns([
        ['Kennung', 'Wortlaut'],
        ['X1', SCAFFOLD],
        ['X2', VPN],
      ]),
    ).toEqual({ hasHeader: true, textColumn: 1, refColumn: 0, titleColumn: null });
    expect(guessColumns([[SCAFFOLD], [VPN]])).toEqual({ hasHeader: false, textColumn: 0, refColumn: null, titleColumn: null });
    // A reference column must be short, present and distinct in every row.
    expect(
      guessColumns([
        ['A', SCAFFOLD],
        ['A', VPN],
      ]).refColumn,
    ).toBeNull();
    expect(guessColumns([])).toEqual({ hasHeader: false, textColumn: 0, refColumn: null, titleColumn: null });
  });

  it('takes the rows below the header with text in the chosen column, the reference as metadata.ref', () => {
    const rows = normalizeRows([
      ['Ref', 'Requirement'],
      ['AC-1', SCAFFOLD],
      ['AC-2', ''],
      ['', VPN],
    ]);
    expect(requirementsFromRows(rows, { hasHeader: true, textColumn: 1, refColumn: 0, titleColumn: null })).toEqual({
      requirements: [{ text: SCAFFOLD, metadata: { ref: 'AC-1' } }, { text: VPN }],
      emptyRows: 1,
      tooLong: [],
    });
    // Without a header the first row is a requirement too; without a reference column no metadata.
    expect(requirementsFromRows(rows, { hasHeader: false, textColumn: 0, refColumn: null, titleColumn: null }).requirements).toEqual([
      { text: 'Ref' },
      { text: 'AC-1' },
      { text: 'AC-2' },
    ]);
  });

  it('keeps the title cell as metadata.title, beside the reference', () => {
    const rows = normalizeRows([
      ['Ref', 'Title', 'Requirement'],
      ['164.312(a)(2)(iii)', 'Automatic logoff', VPN],
      ['164.308(a)(5)(ii)(D)', '', SCAFFOLD],
      ['', 'Scaffolds', SCAFFOLD],
    ]);
    expect(requirementsFromRows(rows, { hasHeader: true, textColumn: 2, refColumn: 0, titleColumn: 1 }).requirements).toEqual([
      { text: VPN, metadata: { ref: '164.312(a)(2)(iii)', title: 'Automatic logoff' } },
      { text: SCAFFOLD, metadata: { ref: '164.308(a)(5)(ii)(D)' } },
      { text: SCAFFOLD, metadata: { title: 'Scaffolds' } },
    ]);
  });

  it('says why the rows cannot make a run: none, more than 1,000, a text too long', () => {
    const choice = { hasHeader: false, textColumn: 0, refColumn: null, titleColumn: null };
    expect(readingProblem(requirementsFromRows([['']], choice))).toMatch(/^No requirement/);
    const many = Array.from({ length: MAX_REQUIREMENTS + 1 }, (_, i) => [`Requirement ${i}`]);
    expect(readingProblem(requirementsFromRows(many, choice))).toBe('1,001 requirements: a run takes at most 1,000. Split the file into several runs.');
    expect(readingProblem(requirementsFromRows(many.slice(1), choice))).toBeNull();
    expect(readingProblem(requirementsFromRows([['ok'], ['x'.repeat(5001)]], choice))).toBe('Row 2: a requirement is at most 5,000 characters.');
  });
});
