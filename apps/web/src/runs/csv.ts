/**
 * CSV of requirements, parsed in the browser with csv-parse (the parser the service's own CSV
 * code uses; Vite takes its browser build, see vite.config.mts). Loaded on demand by
 * read-requirements-file.ts.
 */
import { parse } from 'csv-parse/sync';
import { normalizeRows, type Rows } from './requirements-table';

/** The delimiters a CSV of requirements may use: comma (RFC 4180), semicolon (spreadsheets in locales with a decimal comma), tab. */
export const DELIMITERS = [',', ';', '\t'] as const;
export type Delimiter = (typeof DELIMITERS)[number];

/**
 * The delimiter of `text`: the candidate that occurs most often outside double quotes in its first
 * line with text (a header or the first row); a comma when none occurs (a one-column file).
 */
export function sniffDelimiter(text: string): Delimiter {
  const counts = new Map<Delimiter, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  let seen = false;
  for (const ch of text.replace(/^\uFEFF/, '')) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) {
      if (seen) break;
    } else if (!quoted && counts.has(ch as Delimiter)) counts.set(ch as Delimiter, counts.get(ch as Delimiter)! + 1);
    if (ch.trim()) seen = true;
  }
  return DELIMITERS.reduce((best, d) => (counts.get(d)! > counts.get(best)! ? d : best), ',' as Delimiter);
}

/**
 * The rows of a CSV text ({@link normalizeRows} applied): RFC 4180 quoting (fields may hold the
 * delimiter, quotes doubled, line breaks), a byte-order mark ignored, the delimiter from
 * {@link sniffDelimiter}, rows of different lengths accepted.
 * @throws Error (csv-parse's, naming the line) on malformed quoting, such as an unclosed quote.
 */
export function parseCsv(text: string): Rows {
  const records = parse(text, { delimiter: sniffDelimiter(text), bom: true, relax_column_count: true, skip_empty_lines: true });
  return normalizeRows(records);
}
