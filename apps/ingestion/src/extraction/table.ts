/** Formatting of table rows shared by the DOCX, HTML, Markdown, CSV, XLSX and PPTX extractors. */
import { ExtractedBlock } from './types';

/** Cell separator inside a row line. */
export const CELL_SEPARATOR = ' | ';
/** Rows per table block for long tables (CSV, spreadsheets); the chunker packs them again. */
export const ROWS_PER_BLOCK = 50;

/** Normalises a cell: whitespace (including line breaks) collapsed to single spaces, trimmed. */
export function cleanCell(value: string): string {
  return value.replace(/[\s\u00a0]+/g, ' ').trim();
}

/**
 * Formats cells as one row line (`a | b | c`). Trailing empty cells are dropped; empty cells in
 * between are kept so columns stay aligned with the header. Returns '' for an empty row.
 */
export function formatRow(cells: readonly string[]): string {
  const clean = cells.map(cleanCell);
  let end = clean.length;
  while (end > 0 && clean[end - 1] === '') end--;
  return clean.slice(0, end).join(CELL_SEPARATOR);
}

/**
 * Builds table blocks from a header row and data rows: one block per `rowsPerBlock` rows, each
 * starting with the header line (also given as `tableHeader`). Empty rows are skipped. Without a
 * header (null or empty) the blocks carry no `tableHeader`.
 */
export function tableBlocks(
  header: readonly string[] | null,
  rows: readonly (readonly string[])[],
  page: number | null,
  rowsPerBlock = ROWS_PER_BLOCK,
): ExtractedBlock[] {
  const headerLine = header ? formatRow(header) : '';
  const lines = rows.map(formatRow).filter((l) => l !== '');
  const out: ExtractedBlock[] = [];
  if (lines.length === 0) {
    if (headerLine) out.push({ kind: 'table', text: headerLine, page, tableHeader: headerLine });
    return out;
  }
  for (let i = 0; i < lines.length; i += rowsPerBlock) {
    const group = lines.slice(i, i + rowsPerBlock);
    if (headerLine) out.push({ kind: 'table', text: [headerLine, ...group].join('\n'), page, tableHeader: headerLine });
    else out.push({ kind: 'table', text: group.join('\n'), page });
  }
  return out;
}
