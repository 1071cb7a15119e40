/**
 * Plain text: paragraphs separated by blank lines (wrapped lines joined), form feeds as page
 * breaks, headings from reStructuredText/setext underlines ("Title\n=====") and numbered
 * one-line section titles.
 */
import { readTextFile, looksBinary } from './decode';
import { checkPageLimit, ExtractionContext } from './context';
import { numberedHeadingLevel } from './layout';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

const UNDERLINE_RE = /^([=\-~*^#+_"'`:.])\1{2,}$/;
const BULLET_LINE_RE = /^\s*(?:[*\u2022\u2013-])\s+\S/;

/**
 * Splits text into blocks. `underlineLevels` maps an underline style ("=", or "=/" for an
 * over-and-underline) to its heading level in order of first appearance, as reStructuredText does;
 * pass the same map for all pages of a document.
 */
export function textToBlocks(text: string, page: number | null, underlineLevels: Map<string, number>): ExtractedBlock[] {
  const out: ExtractedBlock[] = [];
  const rawBlocks = text.split(/\n[ \t]*\n/);
  for (const raw of rawBlocks) {
    let lines = raw.split('\n').map((l) => l.replace(/\s+$/, ''));
    while (lines.length && !lines[0].trim()) lines.shift();
    while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
    if (lines.length === 0) continue;

    const heading = underlinedHeading(lines, underlineLevels);
    if (heading) {
      out.push({ kind: 'heading', text: heading.text, page, level: heading.level });
      lines = lines.slice(heading.consumed);
      if (lines.length === 0) continue;
    } else if (lines.length === 1) {
      const level = numberedHeadingLevel(lines[0].trim());
      if (level !== null) {
        out.push({ kind: 'heading', text: lines[0].trim(), page, level });
        continue;
      }
    }
    out.push(...splitItems(lines, page));
  }
  return out;
}

function underlinedHeading(lines: string[], levels: Map<string, number>): { text: string; level: number; consumed: number } | null {
  let over = '';
  let i = 0;
  if (lines.length >= 3 && UNDERLINE_RE.test(lines[0].trim()) && UNDERLINE_RE.test(lines[2].trim())) {
    over = '/';
    i = 1;
  }
  if (lines.length < i + 2) return null;
  const title = lines[i].trim();
  const under = lines[i + 1].trim();
  if (!title || !UNDERLINE_RE.test(under) || under.length < Math.min(3, title.length) || under.length < title.length * 0.6) return null;
  const key = under[0] + over;
  if (!levels.has(key)) levels.set(key, Math.min(6, levels.size + 1));
  return { text: title, level: levels.get(key)!, consumed: i + 2 + (over ? 1 : 0) };
}

/**
 * Text of a block: common indentation removed; wrapped prose (every line at the same indentation,
 * no column layout) is joined into one line, anything else (code, ASCII tables) keeps its lines.
 */
function blockText(lines: readonly string[], hangingIndent = 0): string {
  const indents = lines.map((l) => /^\s*/.exec(l)![0].length);
  const base = Math.min(...indents);
  const dedented = lines.map((l) => l.slice(base));
  const prose =
    indents.every((n, i) => (i === 0 ? n === base : n === base + hangingIndent)) && !dedented.some((l) => /^[|+]/.test(l) || /\S {3,}\S/.test(l.trim()));
  return prose ? dedented.map((l) => l.trim()).join(' ') : dedented.join('\n');
}

/** One block per bullet item when a block is a list ("* a\n* b"), else one paragraph. */
function splitItems(lines: string[], page: number | null): ExtractedBlock[] {
  if (!BULLET_LINE_RE.test(lines[0])) return [{ kind: 'paragraph', text: blockText(lines), page }];
  const items: string[][] = [];
  for (const line of lines) {
    if (BULLET_LINE_RE.test(line) || items.length === 0) items.push([line]);
    else items[items.length - 1].push(line);
  }
  return items.map((item) => {
    const marker = /^\s*\S+\s+/.exec(item[0])![0].length - /^\s*/.exec(item[0])![0].length;
    return { kind: 'list' as const, text: blockText(item, marker), page };
  });
}

/** Characters of text split into blocks between two yields to the event loop. */
const SLICE_CHARS = 256 * 1024;

/**
 * textToBlocks over a long text, a slice at a time (each cut at a blank line, where textToBlocks
 * splits anyway, so the blocks are the same), appending to `out` and yielding to the event loop
 * between slices: a 15 MiB text file blocked the ingestion worker's event loop for 7 s in one
 * call, long enough to miss its JetStream heartbeats (README, "Crash recovery").
 * @param sliceChars slice length (characters); a slice runs on to the next blank line.
 */
export async function textToBlocksYielding(
  text: string,
  page: number | null,
  underlineLevels: Map<string, number>,
  out: ExtractedBlock[],
  sliceChars = SLICE_CHARS,
): Promise<void> {
  const separator = /\n[ \t]*\n/g;
  let start = 0;
  while (start < text.length) {
    let end = text.length;
    let next = text.length;
    if (text.length - start > sliceChars) {
      separator.lastIndex = start + sliceChars;
      const m = separator.exec(text);
      if (m) {
        end = m.index;
        next = m.index + m[0].length;
      }
    }
    // One push per block: spreading ~100k blocks into push() overflows the call stack.
    for (const block of textToBlocks(text.slice(start, end), page, underlineLevels)) out.push(block);
    start = next;
    if (start < text.length) await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Extracts a plain-text file. Without form feeds the blocks have `page: null` and `pageCount` is
 * null; with form feeds each form-feed-separated part is a page. Throws `CORRUPT_FILE` for binary
 * content, `NO_TEXT` when there is no text, `TOO_LARGE` for more pages than allowed.
 */
export async function extractText(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const text = await readTextFile(filePath);
  if (looksBinary(text)) {
    throw new ExtractionError('CORRUPT_FILE', 'The file is not plain text (it contains binary data); check the file type and upload it again.');
  }
  const levels = new Map<string, number>();
  const blocks: ExtractedBlock[] = [];
  let pageCount: number | null = null;
  if (text.includes('\f')) {
    const pages = text.split('\f');
    if (pages.length > 1 && !pages[pages.length - 1].trim()) pages.pop();
    checkPageLimit(ctx, pages.length, 'page');
    pageCount = pages.length;
    for (const [i, p] of pages.entries()) await textToBlocksYielding(p, i + 1, levels, blocks);
  } else {
    await textToBlocksYielding(text, null, levels, blocks);
  }
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', 'The text file is empty; upload a file with content.');
  const title = blocks.find((b) => b.kind === 'heading')?.text ?? null;
  return { blocks, pageCount, title };
}
