/**
 * XLSX with exceljs: one page per worksheet (page = 1-based position of the sheet in the
 * workbook, hidden sheets included so positions match the workbook), a heading with the sheet
 * name, lines above the table as paragraphs, then the rows as table blocks carrying the header row.
 */
import ExcelJS from 'exceljs';
import { checkAborted, checkPageLimit, ExtractionContext, raceAbort } from './context';
import { readOfficePackage } from './office';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';
import { cleanCell, tableBlocks } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

type CellValue = ExcelJS.CellValue;

/** Display text of a cell value: rich text joined, formulas by their cached result, dates as ISO dates. */
export function cellText(value: CellValue): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) {
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.replace('.000Z', 'Z');
  }
  const v = value as unknown as Record<string, unknown>;
  if (Array.isArray(v.richText)) return (v.richText as { text: string }[]).map((r) => r.text).join('');
  if ('formula' in v || 'sharedFormula' in v || 'result' in v) return cellText(v.result as CellValue);
  if ('text' in v) return cellText(v.text as CellValue);
  if ('error' in v) return String(v.error);
  return '';
}

/** The rows of a sheet as arrays of cell texts, from the first to the last used column; empty rows dropped. */
function sheetRows(ws: ExcelJS.Worksheet): string[][] {
  const rows: Map<number, string>[] = [];
  let minCol = Infinity;
  ws.eachRow({ includeEmpty: false }, (row) => {
    const cells = new Map<number, string>();
    row.eachCell({ includeEmpty: false }, (cell, col) => {
      if (cell.isMerged && cell.master !== cell) return; // merged area: text only in its first cell
      const text = cleanCell(cellText(cell.value));
      if (text) {
        cells.set(col, text);
        minCol = Math.min(minCol, col);
      }
    });
    if (cells.size) rows.push(cells);
  });
  return rows.map((cells) => {
    const maxCol = Math.max(...cells.keys());
    const out: string[] = [];
    for (let c = minCol; c <= maxCol; c++) out.push(cells.get(c) ?? '');
    return out;
  });
}

function filled(row: readonly string[]): number {
  return row.filter((c) => c !== '').length;
}

/**
 * Index of the header row: the first row with at least two filled cells and at least half as
 * many as the widest row. Returns -1 when no row qualifies (a sheet of notes).
 */
export function findHeaderRow(rows: readonly (readonly string[])[]): number {
  const widest = Math.max(0, ...rows.map(filled));
  const needed = Math.max(2, Math.ceil(widest / 2));
  return rows.findIndex((r) => filled(r) >= needed);
}

/**
 * Extracts an XLSX workbook. Throws `ENCRYPTED` (password-protected workbook), `UNSUPPORTED_TYPE`
 * (legacy .xls), `CORRUPT_FILE`, `TOO_LARGE` (more sheets than `maxPages`), `NO_TEXT` (all sheets empty).
 */
export async function extractXlsx(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const buffer = await readOfficePackage(filePath, 'Excel workbook', 'xlsx', { ...DEFAULT_ZIP_LIMITS, maxUncompressedBytes: ctx.maxUnzippedBytes });
  const wb = new ExcelJS.Workbook();
  try {
    await raceAbort(ctx, wb.xlsx.load(buffer as unknown as ArrayBuffer));
  } catch (e) {
    if (e instanceof ExtractionError || ctx.signal.aborted) throw e;
    throw new ExtractionError('CORRUPT_FILE', 'The Excel workbook could not be read; it may be damaged. Open it in Excel, save a new copy and upload that.');
  }
  checkPageLimit(ctx, wb.worksheets.length, 'sheet');
  const blocks: ExtractedBlock[] = [];
  let hasCells = false;
  const sheets = wb.worksheets.length;
  ctx.progress('extracting', 0, sheets);
  wb.worksheets.forEach((ws, i) => {
    checkAborted(ctx);
    const page = i + 1;
    if (i > 0) ctx.progress('extracting', i, sheets);
    const rows = sheetRows(ws);
    blocks.push({ kind: 'heading', text: ws.name, page, level: 1 });
    if (rows.length === 0) return;
    hasCells = true;
    const headerIndex = findHeaderRow(rows);
    const notes = headerIndex === -1 ? rows : rows.slice(0, headerIndex);
    for (const note of notes) blocks.push({ kind: 'paragraph', text: note.filter(Boolean).join(' '), page });
    if (headerIndex !== -1) blocks.push(...tableBlocks(rows[headerIndex], rows.slice(headerIndex + 1), page));
  });
  ctx.progress('extracting', sheets, sheets);
  if (!hasCells) throw new ExtractionError('NO_TEXT', 'The Excel workbook has no filled cells; upload a workbook with content.');
  return { blocks, pageCount: wb.worksheets.length, title: readTitle(wb) };
}

function readTitle(wb: ExcelJS.Workbook): string | null {
  const t = (wb as unknown as { title?: string }).title;
  return typeof t === 'string' && t.trim() ? t.trim() : null;
}
