/**
 * Reads a file of requirements the person picked (CSV or XLSX) into sheets of rows, in the browser.
 * The parsers are loaded only when a file is read: csv-parse (small) and exceljs (about 1 MB
 * minified, its own chunk of the build).
 */
import { rowsOfWorksheet, type SheetRows } from './requirements-table';

/** Largest file read in the browser: 10 MB, far above 1,000 requirements in either format. */
export const MAX_TABLE_FILE_BYTES = 10 * 1000 * 1000;

/** The extensions the picker offers (its `accept`). */
export const TABLE_FILE_ACCEPT = '.csv,.xlsx,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** Whether `file` is read as XLSX (by extension, else by type), else as CSV. */
function kindOf(file: File): 'csv' | 'xlsx' | null {
  const name = file.name.toLowerCase();
  if (name.endsWith('.xlsx') || file.type === 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet') return 'xlsx';
  if (name.endsWith('.csv') || file.type === 'text/csv') return 'csv';
  return null;
}

/**
 * The sheets of `file`: one named after the file for a CSV (UTF-8), each worksheet of an XLSX
 * workbook in order (sheets without any text left out).
 * @throws Error with a sentence for the person: not a .csv or .xlsx, larger than
 *   {@link MAX_TABLE_FILE_BYTES}, unreadable (malformed CSV quoting, not an XLSX workbook: a
 *   legacy .xls included), or no text in it.
 */
export async function readRequirementsFile(file: File): Promise<SheetRows[]> {
  const kind = kindOf(file);
  if (!kind) throw new Error(`${file.name}: choose a .csv or .xlsx file (an older .xls workbook can be saved as .xlsx from Excel).`);
  if (file.size > MAX_TABLE_FILE_BYTES) throw new Error(`${file.name} is larger than 10 MB: a run takes at most 1,000 requirements.`);
  let sheets: SheetRows[];
  if (kind === 'csv') {
    const { parseCsv } = await import('./csv');
    try {
      sheets = [{ name: file.name, rows: parseCsv(await file.text()) }];
    } catch (e) {
      throw new Error(`${file.name} could not be read as CSV: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  } else {
    const { default: ExcelJS } = await import('exceljs');
    const workbook = new ExcelJS.Workbook();
    try {
      await workbook.xlsx.load(await file.arrayBuffer());
    } catch {
      throw new Error(`${file.name} could not be read as an Excel (XLSX) workbook.`);
    }
    sheets = workbook.worksheets.map((ws) => ({ name: ws.name, rows: rowsOfWorksheet(ws) }));
  }
  sheets = sheets.filter((s) => s.rows.length > 0);
  if (sheets.length === 0) throw new Error(`${file.name} holds no text.`);
  return sheets;
}
