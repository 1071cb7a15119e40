/**
 * Requirements from a table (issue 31 item 4): the rows of a CSV file or of an XLSX sheet, the
 * column that holds the requirement text (and optionally one with a reference, kept as
 * `metadata.ref`, and one with a title, kept as `metadata.title`: the check reads a requirement with
 * its title, docs/check.md), whether the first row is a header, and the requirements those choices give.
 * Pure functions on rows of strings; reading the files is in read-requirements-file.ts.
 */
import type { Worksheet } from 'exceljs';

/** Most requirements in one check run (the API's limit, libs/common limits.ts MAX_REQUIREMENTS_PER_RUN). */
export const MAX_REQUIREMENTS = 1000;

/** Longest requirement text the API takes (libs/common limits.ts REQUIREMENT_MAX_CHARS), in code points. */
export const REQUIREMENT_MAX_CHARS = 5000;

/** A table read from a file: rows of cell texts, every row as wide as the widest, no row all blank. */
export type Rows = string[][];

/** One sheet of a workbook (a CSV file is one sheet named after the file). */
export interface SheetRows {
  name: string;
  rows: Rows;
}

/** How the rows are read: 0-based column indexes; `refColumn` / `titleColumn` null when none is taken. */
export interface ColumnChoice {
  hasHeader: boolean;
  textColumn: number;
  refColumn: number | null;
  titleColumn: number | null;
}

/** A requirement as POST /api/v2/check/runs takes it. */
export interface RequirementInput {
  text: string;
  metadata?: { ref?: string; title?: string };
}

/** Header words of a column of requirement texts (English, French, German, Spanish). */
const TEXT_HEADER = /requirement|exigence|anforderung|requisito|statement|description|text|texte|control text|obligation|clause text/i;
/**
 * Header words of a column of requirement titles ("Automatic logoff", "Information backup"); checked before the
 * other two, so "Requirement title" and "Control name" are titles, not texts or references.
 */
const TITLE_HEADER = /^(?:(?:requirement|control|clause|short)\s+)?(?:title|name|heading)$|^(?:titre|intitulé|titel|bezeichnung|título|nombre)$/i;
/** Header words of a column of references (identifiers, clause numbers). */
const REF_HEADER = /^(ref|reference|référence|referenz|id|identifier|no\.?|nr\.?|n°|number|#|clause|section|article|control|control id|code|key)\b/i;

/**
 * A value longer than this (characters) is prose rather than a reference or a header cell; the
 * header and reference guesses use it (a reference such as "ISO 27001 A.5.1.2" fits in 24).
 */
const SHORT = 24;

/** Spreadsheet column letters of a 0-based index: 0 → A, 25 → Z, 26 → AA. */
export function columnLetter(index: number): string {
  let n = index + 1;
  let s = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}

/**
 * Rows as {@link Rows}: cells trimmed, rows with no text dropped, every row padded with '' to the
 * widest row's length.
 */
export function normalizeRows(rows: readonly (readonly string[])[]): Rows {
  const kept = rows.map((r) => r.map((c) => (c ?? '').trim())).filter((r) => r.some((c) => c !== ''));
  const width = Math.max(0, ...kept.map((r) => r.length));
  return kept.map((r) => [...r, ...Array<string>(width - r.length).fill('')]);
}

/**
 * The rows of a worksheet of exceljs ({@link normalizeRows} applied): each cell as Excel displays
 * its value (`cell.text`: a formula's result, a hyperlink's or rich text's text), a date as
 * YYYY-MM-DD.
 */
export function rowsOfWorksheet(sheet: Worksheet): Rows {
  const rows: string[][] = [];
  const width = sheet.columnCount;
  for (let r = 1; r <= sheet.rowCount; r++) {
    const row = sheet.getRow(r);
    const cells: string[] = [];
    for (let c = 1; c <= width; c++) {
      const cell = row.getCell(c);
      cells.push(cell.value instanceof Date ? cell.value.toISOString().slice(0, 10) : cell.value === null || cell.value === undefined ? '' : cell.text);
    }
    rows.push(cells);
  }
  return normalizeRows(rows);
}

/** The cells of `column` below the header (all of them when there is none). */
function body(rows: Rows, hasHeader: boolean, column: number): string[] {
  return rows.slice(hasHeader ? 1 : 0).map((r) => r[column] ?? '');
}

function meanLength(values: string[]): number {
  const filled = values.filter(Boolean);
  return filled.length ? filled.reduce((n, v) => n + v.length, 0) / filled.length : 0;
}

/**
 * Guesses how to read `rows`, for the person to confirm or change:
 * - a header row when a first-row cell names a requirement or reference column (TEXT_HEADER,
 *   REF_HEADER, TITLE_HEADER), or when no first-row cell is longer than 24 characters while the column of
 *   the longest texts has below it texts at least twice as long on average;
 * - the requirement column: the one whose header names requirement texts, else the one with the
 *   longest texts on average;
 * - the reference column: the one whose header names references, else the first other column
 *   (not the title one) whose values are all present, short (≤ 24 characters) and distinct; none when
 *   no such column;
 * - the title column: the one whose header names titles (Title, Name, Control name, Titre, Titel…); none
 *   otherwise (titles look like references or short texts, so they are not guessed from the values).
 * An empty table gives column 0, no header, no reference, no title.
 */
export function guessColumns(rows: Rows): ColumnChoice {
  const width = rows[0]?.length ?? 0;
  if (width === 0) return { hasHeader: false, textColumn: 0, refColumn: null, titleColumn: null };
  const first = rows[0];
  const columns = [...Array(width).keys()];
  const longest = (hasHeader: boolean) =>
    columns.reduce((best, c) => (meanLength(body(rows, hasHeader, c)) > meanLength(body(rows, hasHeader, best)) ? c : best), 0);

  const namedTitle = columns.find((c) => TITLE_HEADER.test(first[c]));
  const namedText = columns.find((c) => c !== namedTitle && TEXT_HEADER.test(first[c]) && first[c].length <= 40);
  const namedRef = columns.find((c) => c !== namedText && c !== namedTitle && REF_HEADER.test(first[c]) && first[c].length <= SHORT);
  let hasHeader = namedText !== undefined || namedRef !== undefined || namedTitle !== undefined;
  if (!hasHeader && rows.length > 1 && first.every((c) => c.length <= SHORT)) {
    const c = longest(true);
    hasHeader = meanLength(body(rows, true, c)) >= 2 * Math.max(1, first[c].length);
  }
  const textColumn = namedText ?? longest(hasHeader);
  const titleColumn = namedTitle !== undefined && namedTitle !== textColumn ? namedTitle : null;
  let refColumn: number | null = namedRef ?? null;
  if (refColumn === null) {
    refColumn =
      columns.find((c) => {
        if (c === textColumn || c === titleColumn) return false;
        const values = body(rows, hasHeader, c);
        return values.length > 0 && values.every((v) => v !== '' && v.length <= SHORT) && new Set(values).size === values.length;
      }) ?? null;
  }
  return { hasHeader, textColumn, refColumn, titleColumn };
}

/** The requirements of `rows` read as `choice` says, and what could not be taken. */
export interface RowsReading {
  /** One per row with a requirement text, in the rows' order; `metadata.ref` / `metadata.title` when those cells have text. */
  requirements: RequirementInput[];
  /** Rows below the header whose requirement cell is empty (left out). */
  emptyRows: number;
  /** 1-based row numbers (as the file or sheet numbers them, header included) of texts over {@link REQUIREMENT_MAX_CHARS}. */
  tooLong: number[];
}

/**
 * Reads `rows` as `choice` says: the header row (when there is one) is skipped, each other row
 * with text in `textColumn` is a requirement (the cell trimmed), with `metadata.ref` from
 * `refColumn` and `metadata.title` from `titleColumn` when those cells have text. Rows with an empty requirement cell are counted, not taken.
 * Row numbers count the rows as kept by {@link normalizeRows} (blank rows of the file are dropped).
 */
export function requirementsFromRows(rows: Rows, choice: ColumnChoice): RowsReading {
  const requirements: RequirementInput[] = [];
  const tooLong: number[] = [];
  let emptyRows = 0;
  const start = choice.hasHeader ? 1 : 0;
  for (let i = start; i < rows.length; i++) {
    const text = (rows[i][choice.textColumn] ?? '').trim();
    if (!text) {
      emptyRows++;
      continue;
    }
    if ([...text].length > REQUIREMENT_MAX_CHARS) tooLong.push(i + 1);
    const ref = choice.refColumn === null ? '' : (rows[i][choice.refColumn] ?? '').trim();
    const title = choice.titleColumn === null ? '' : (rows[i][choice.titleColumn] ?? '').trim();
    const metadata = { ...(ref ? { ref } : {}), ...(title ? { title } : {}) };
    requirements.push(ref || title ? { text, metadata } : { text });
  }
  return { requirements, emptyRows, tooLong };
}

/**
 * Why `reading` cannot make a run, or null when it can: no requirement, more than
 * {@link MAX_REQUIREMENTS}, or texts longer than {@link REQUIREMENT_MAX_CHARS} (the first rows named).
 */
export function readingProblem(reading: RowsReading): string | null {
  const n = reading.requirements.length;
  if (n === 0) return 'No requirement: the chosen column is empty in every row.';
  if (n > MAX_REQUIREMENTS)
    return `${n.toLocaleString('en-US')} requirements: a run takes at most ${MAX_REQUIREMENTS.toLocaleString('en-US')}. Split the file into several runs.`;
  if (reading.tooLong.length > 0) {
    const rows = reading.tooLong.slice(0, 5).join(', ') + (reading.tooLong.length > 5 ? '…' : '');
    return `Row${reading.tooLong.length === 1 ? '' : 's'} ${rows}: a requirement is at most ${REQUIREMENT_MAX_CHARS.toLocaleString('en-US')} characters.`;
  }
  return null;
}
