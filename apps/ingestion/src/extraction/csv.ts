/**
 * CSV with csv-parse: the first record is the header, the rest become table blocks of
 * {@link ROWS_PER_BLOCK} rows that each carry the header (the chunker repeats it in every chunk).
 */
import { parse } from 'csv-parse/sync';
import { readTextFile } from './decode';
import { ExtractionContext } from './context';
import { tableBlocks } from './table';
import { ExtractedDocument, ExtractionError } from './types';

/** Picks the delimiter (',', ';', tab or '|') that occurs most often in the first line outside quotes. */
export function sniffDelimiter(text: string): string {
  const firstLine = text.slice(0, text.indexOf('\n') === -1 ? text.length : text.indexOf('\n')).replace(/"[^"]*"/g, '');
  let best = ',';
  let bestCount = 0;
  for (const d of [',', ';', '\t', '|']) {
    const count = firstLine.split(d).length - 1;
    if (count > bestCount) {
      best = d;
      bestCount = count;
    }
  }
  return best;
}

/** Header cells: HTML leftovers such as "&nbsp;" are blanked, whitespace trimmed. */
function cleanHeader(cell: string): string {
  return cell
    .replace(/&nbsp;?/gi, ' ')
    .replace(/&amp;/gi, '&')
    .trim();
}

/**
 * Extracts a CSV file into table blocks (`page: null`). Tolerates ragged rows, stray quotes, a BOM
 * and copies of the header row inside the data (dropped). Throws `CORRUPT_FILE` when the file cannot be parsed, `NO_TEXT` when it has no cells.
 */
export async function extractCsv(_ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const text = await readTextFile(filePath);
  let records: string[][];
  try {
    records = parse(text, {
      delimiter: sniffDelimiter(text),
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      bom: true,
    });
  } catch (e) {
    const where = e instanceof Error && /line \d+/i.exec(e.message)?.[0];
    throw new ExtractionError('CORRUPT_FILE', `The CSV file could not be parsed${where ? ` (${where})` : ''}; check its quoting and upload it again.`);
  }
  const nonEmpty = records.filter((r) => r.some((c) => c.trim() !== ''));
  if (nonEmpty.length === 0) throw new ExtractionError('NO_TEXT', 'The CSV file contains no data; upload a file with rows.');
  const [header, ...rest] = nonEmpty;
  // Files glued together from several exports repeat the header row; those copies are not data.
  const headerKey = header.map((c) => c.trim()).join('\u0000');
  const rows = rest.filter((r) => r.map((c) => c.trim()).join('\u0000') !== headerKey);
  const blocks = tableBlocks(header.map(cleanHeader), rows, null);
  return { blocks, pageCount: null, title: null };
}
