import { extractDocument } from './index';
import { corpus } from './testing/corpus';
import { findHeaderRow } from './xlsx';

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

describe('XLSX extraction (exceljs)', () => {
  it('gives one page per sheet, a heading with the sheet name, notes above the table and rows under the header row', async () => {
    const doc = await extractDocument(corpus('xlsx/fedramp_tailored_AppA_Security_Controls_Baseline.xlsx'), XLSX);
    expect(doc.pageCount).toBe(3);
    expect(doc.blocks.filter((b) => b.kind === 'heading')).toEqual([
      { kind: 'heading', text: 'Key to LI-SaaS Baseline', page: 1, level: 1 },
      { kind: 'heading', text: 'CSP Response', page: 2, level: 1 },
      { kind: 'heading', text: 'LI-SaaS Baseline', page: 3, level: 1 },
    ]);
    const sheet2 = doc.blocks.filter((b) => b.page === 2);
    expect(sheet2[1]).toEqual({ kind: 'paragraph', text: 'FedRAMP Tailored LI-SaaS Baseline - CSP Response Required', page: 2 });
    const tables = sheet2.filter((b) => b.kind === 'table');
    const header = 'No | Control ID | Control Name | Tailoring Action | Additional Control Tailoring Comments';
    expect(tables.length).toBeGreaterThan(1);
    for (const t of tables) {
      expect(t.tableHeader).toBe(header);
      expect(t.text.startsWith(`${header}\n`)).toBe(true);
    }
    const rows = tables.flatMap((t) => t.text.split('\n').slice(1));
    // formulas show their cached result ("2"), rows keep their columns
    expect(rows.slice(0, 2)).toEqual(['1 | AC-1 | Access Control Policy and Procedures | Attest', '2 | AC-2 | Account Management | Document and Assess']);
  });

  it('keeps empty cells between filled ones so values stay under their column', async () => {
    const doc = await extractDocument(corpus('xlsx/fedramp_AwesomeCloud_SOD_Matrix.xlsx'), XLSX);
    const table = doc.blocks.find((b) => b.kind === 'table')!;
    expect(table.tableHeader).toMatch(/^Role: \| Add\/remove users and hardware \| Install and configure software \|/);
    expect(table.text.split('\n')).toContain('system-owner |  |  |  | X | X |  | X');
  });

  it('reads every sheet of a multi-sheet workbook, hidden ones included', async () => {
    const doc = await extractDocument(corpus('xlsx/fedramp_OSCAL_Registry.xlsx'), XLSX);
    expect(doc.blocks.filter((b) => b.kind === 'heading').map((b) => [b.page, b.text])).toEqual([
      [1, 'INFORMATION'],
      [2, 'Core OSCAL Names'],
    ]);
    expect(doc.blocks.some((b) => b.page === 1 && b.text.startsWith('The Excel version of the FedRAMP Registery has been replaced.'))).toBe(true);
  });

  it('picks the first row that is at least half as wide as the table as header', () => {
    expect(findHeaderRow([['Title'], ['', 'No', 'Control ID', 'Name'], ['1', 'AC-1', 'x', 'y']])).toBe(1);
    expect(findHeaderRow([['Only notes'], ['More notes']])).toBe(-1);
  });
});
