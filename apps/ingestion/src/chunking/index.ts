/**
 * Chunking: packs the blocks of an extracted document into passages for indexing and quoting.
 *
 * - Headings are not chunk text: each heading closes the current chunk and sets the heading path
 *   (a stack by level) of the chunks that follow. A heading whose section has no content of its
 *   own is not lost: its text joins the next chunk as a line of text.
 * - Paragraphs and list items are packed up to `targetChars` (a chunk still under half the target
 *   may take a next block up to `maxChars`, to avoid tiny chunks), never beyond `maxChars`; a block
 *   longer than `maxChars` is cut into pieces of at most `targetChars` at sentence boundaries, a
 *   sentence longer than the target at whitespace.
 * - A chunk started because the previous one was full repeats the previous chunk's last
 *   sentence(s), up to `overlapChars`, within the same section and not after a table.
 * - Tables are cut only between rows (a single overlong row at whitespace), and every chunk that
 *   holds table rows starts with the table's header line.
 * - Blocks are joined with "\n\n" (rows of one table with "\n"); `pageSpans` records where each
 *   page's text starts in `text`.
 */
import { ExtractedBlock, ExtractedDocument } from '../extraction';
import { sentenceSpans } from './sentences';

/** Where a page's text begins: `offset` is a character index into `Chunk.text`. */
export interface PageSpan {
  page: number;
  offset: number;
}

/**
 * One passage of a document.
 * - `index`: 0-based position in the document.
 * - `text`: the passage (no heading path in it).
 * - `headingPath`: titles of the enclosing sections, outermost first.
 * - `startPage`/`endPage`: 1-based inclusive page range, null for page-less formats.
 * - `pageSpans`: ascending offsets, the first 0; the page of character `i` is the page of the last
 *   span with `offset <= i`. Empty for page-less formats.
 */
export interface Chunk {
  index: number;
  text: string;
  headingPath: string[];
  startPage: number | null;
  endPage: number | null;
  pageSpans: PageSpan[];
}

/** Sizes in characters: `targetChars` (default 1200), `maxChars` (hard limit, default 2000), `overlapChars` (default 150). */
export interface ChunkOptions {
  targetChars?: number;
  maxChars?: number;
  overlapChars?: number;
}

const BLOCK_SEPARATOR = '\n\n';
const ROW_SEPARATOR = '\n';

interface Sizes {
  target: number;
  max: number;
  overlap: number;
}

function resolveSizes(options: ChunkOptions): Sizes {
  const max = Math.max(50, Math.floor(options.maxChars ?? 2000));
  const target = Math.max(20, Math.min(max, Math.floor(options.targetChars ?? 1200)));
  const overlap = Math.max(0, Math.min(Math.floor(target / 2), Math.floor(options.overlapChars ?? 150)));
  return { target, max, overlap };
}

/** A piece of a block: its text and the separator that precedes it when it follows other text. */
interface Atom {
  text: string;
  sep: string;
}

/** Page spans of `text.slice(from)` given the spans of `text`; offsets relative to `from`. */
function sliceSpans(spans: readonly PageSpan[], from: number): PageSpan[] {
  let first: PageSpan | null = null;
  const rest: PageSpan[] = [];
  for (const s of spans) {
    if (s.offset <= from) first = { page: s.page, offset: 0 };
    else rest.push({ page: s.page, offset: s.offset - from });
  }
  return first ? [first, ...rest] : rest;
}

/** Cuts `text` (trimmed) at whitespace into pieces of at most `limit` characters; a longer word is cut hard. */
function splitAtWhitespace(text: string, limit: number): Atom[] {
  const out: Atom[] = [];
  let pos = 0;
  let sep = '';
  while (text.length - pos > limit) {
    let cut = -1;
    for (let i = pos + limit; i > pos; i--) {
      if (/\s/.test(text[i]) && !/\s/.test(text[i - 1])) {
        cut = i;
        break;
      }
    }
    let next = cut;
    if (cut === -1) {
      cut = pos + limit;
      next = cut;
    } else {
      while (next < text.length && /\s/.test(text[next])) next++;
    }
    out.push({ text: text.slice(pos, cut), sep });
    sep = text.slice(cut, next);
    pos = next;
  }
  if (pos < text.length) out.push({ text: text.slice(pos), sep });
  return out;
}

/**
 * Cuts an overlong text into pieces of at most `target` characters at sentence boundaries
 * (sentences longer than `target` at whitespace). Each piece keeps the original whitespace
 * before it as its separator, so joining the pieces gives back the text.
 */
function splitLongText(text: string, target: number): Atom[] {
  const sentences = sentenceSpans(text);
  const out: Atom[] = [];
  let pieceStart = -1;
  let pieceEnd = -1;
  let prevEnd = 0;
  const push = (start: number, end: number) => {
    out.push({ text: text.slice(start, end), sep: out.length === 0 ? '' : text.slice(prevEnd, start) });
    prevEnd = end;
  };
  for (const s of sentences) {
    if (pieceStart !== -1 && s.end - pieceStart <= target) {
      pieceEnd = s.end;
      continue;
    }
    if (pieceStart !== -1) push(pieceStart, pieceEnd);
    if (s.end - s.start > target) {
      const parts = splitAtWhitespace(text.slice(s.start, s.end), target);
      let offset = s.start;
      parts.forEach((p, i) => {
        offset += p.sep.length;
        if (i < parts.length - 1) push(offset, offset + p.text.length);
        else {
          pieceStart = offset;
          pieceEnd = offset + p.text.length;
        }
        offset += p.text.length;
      });
      continue;
    }
    pieceStart = s.start;
    pieceEnd = s.end;
  }
  if (pieceStart !== -1) push(pieceStart, pieceEnd);
  return out;
}

class ChunkBuilder {
  text = '';
  spans: PageSpan[] = [];
  /** Header of the table whose rows end this chunk; undefined for a header-less table. */
  tableHeader: string | undefined;
  /** The chunk currently ends with table rows. */
  inTable = false;

  constructor(
    readonly headingPath: string[],
    readonly section: number,
  ) {}

  append(sep: string, text: string, page: number | null): void {
    const offset = this.text ? this.text.length + sep.length : 0;
    this.text = this.text ? this.text + sep + text : text;
    this.markPage(page, offset);
  }

  appendWithSpans(text: string, spans: readonly PageSpan[]): void {
    const base = this.text.length;
    this.text += text;
    for (const s of spans) this.markPage(s.page, base + s.offset);
  }

  private markPage(page: number | null, offset: number): void {
    if (page === null) return;
    if (this.spans.length === 0) this.spans.push({ page, offset: 0 });
    else if (this.spans[this.spans.length - 1].page !== page) this.spans.push({ page, offset });
  }
}

/** The section number of a numbered heading ("11.5.2 Title" -> [11, 5, 2]), or null. */
function sectionNumber(text: string): number[] | null {
  const m = /^\s*(\d+(?:\.\d+)*)\.?\s+\S/.exec(text);
  return m ? m[1].split('.').map(Number) : null;
}

/** True when section `a` encloses section `b` (`a` is a proper prefix of `b`: 11 encloses 11.5). */
function isAncestorNumber(a: number[], b: number[]): boolean {
  return a.length < b.length && a.every((n, i) => n === b[i]);
}

interface StackEntry {
  level: number;
  text: string;
  page: number | null;
  used: boolean;
  order: number;
}

class Chunker {
  readonly chunks: Chunk[] = [];
  private readonly stack: StackEntry[] = [];
  private orphans: StackEntry[] = [];
  private section = 0;
  private cur: ChunkBuilder | null = null;
  /** The last emitted chunk, while overlap from it is allowed (same section, ended with prose). */
  private previous: ChunkBuilder | null = null;
  private order = 0;

  constructor(private readonly sizes: Sizes) {}

  heading(block: ExtractedBlock): void {
    this.emit();
    this.previous = null;
    const level = Math.min(6, Math.max(1, Math.floor(block.level ?? 1)));
    const number = sectionNumber(block.text);
    while (this.stack.length) {
      const top = this.stack[this.stack.length - 1];
      const topNumber = sectionNumber(top.text);
      // A dotted section number ("11.11 Games") is not inside a numbered section that is not its
      // ancestor ("5. Providing httpd", a numbered list item taken for a heading). A single number
      // ("5.") may be such a list item itself, so it does not pop by number.
      const foreign = number !== null && number.length >= 2 && topNumber !== null && !isAncestorNumber(topNumber, number);
      if (top.level < level && !foreign) break;
      const popped = this.stack.pop()!;
      if (!popped.used) this.orphans.push(popped);
    }
    this.stack.push({ level, text: block.text.trim(), page: block.page, used: false, order: this.order++ });
    this.section++;
  }

  prose(block: ExtractedBlock): void {
    const text = block.text.trim();
    if (!text) return;
    this.flushOrphans();
    const atoms = text.length <= this.sizes.max ? [{ text, sep: '' }] : splitLongText(text, this.sizes.target);
    atoms.forEach((atom, i) => this.addProse(atom.text, i === 0 ? BLOCK_SEPARATOR : atom.sep, block.page));
  }

  table(block: ExtractedBlock): void {
    let header = block.tableHeader?.trim() || undefined;
    const lines = block.text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (header && header.length > this.sizes.max / 2) header = undefined; // cannot be repeated
    const rows = header && lines[0] === header ? lines.slice(1) : lines;
    this.flushOrphans();
    if (rows.length === 0) {
      if (header) this.addProse(header, BLOCK_SEPARATOR, block.page);
      return;
    }
    const rowLimit = this.sizes.max - (header ? header.length + ROW_SEPARATOR.length : 0);
    for (const row of rows) {
      const pieces = row.length > rowLimit ? splitAtWhitespace(row, rowLimit) : [{ text: row, sep: '' }];
      for (const piece of pieces) this.addRow(piece.text, header, block.page);
    }
  }

  finish(): Chunk[] {
    this.emit();
    for (const entry of this.stack) if (!entry.used) this.orphans.push(entry);
    this.stack.length = 0;
    this.flushOrphans();
    this.emit();
    return this.chunks;
  }

  /** Headings of empty sections become text of the next chunk (in document order). */
  private flushOrphans(): void {
    if (this.orphans.length === 0) return;
    const pending = this.orphans.sort((a, b) => a.order - b.order);
    this.orphans = [];
    for (const o of pending) this.addProse(o.text, BLOCK_SEPARATOR, o.page);
  }

  private fits(sep: string, text: string): boolean {
    if (!this.cur || this.cur.text === '') return true;
    const length = this.cur.text.length + sep.length + text.length;
    return length <= this.sizes.target || (this.cur.text.length < this.sizes.target / 2 && length <= this.sizes.max);
  }

  private open(): ChunkBuilder {
    for (const entry of this.stack) entry.used = true;
    this.cur = new ChunkBuilder(
      this.stack.map((e) => e.text),
      this.section,
    );
    return this.cur;
  }

  private addProse(text: string, sep: string, page: number | null): void {
    if (this.cur && this.fits(sep, text)) {
      this.cur.append(sep, text, page);
      this.cur.inTable = false;
      return;
    }
    const previous = this.cur ?? this.previous;
    this.emit();
    const chunk = this.open();
    const overlap = previous ? this.overlapFrom(previous, sep, text) : null;
    if (overlap) {
      chunk.appendWithSpans(overlap.text, overlap.spans);
      chunk.append(sep, text, page);
    } else {
      chunk.append('', text, page);
    }
  }

  private addRow(row: string, header: string | undefined, page: number | null): void {
    const cur = this.cur;
    if (cur && cur.inTable && cur.tableHeader === header && this.fits(ROW_SEPARATOR, row)) {
      cur.append(ROW_SEPARATOR, row, page);
      return;
    }
    if (cur && !header && !cur.inTable && this.fits(BLOCK_SEPARATOR, row)) {
      cur.append(BLOCK_SEPARATOR, row, page); // a header-less table may follow prose
    } else {
      this.emit();
      const chunk = this.open();
      if (header) {
        chunk.append('', header, page);
        chunk.append(ROW_SEPARATOR, row, page);
      } else {
        chunk.append('', row, page);
      }
    }
    this.cur!.inTable = true;
    this.cur!.tableHeader = header;
  }

  /** The trailing sentences of `previous` (at most `overlap` chars) that may start the next chunk, or null. */
  private overlapFrom(previous: ChunkBuilder, sep: string, next: string): { text: string; spans: PageSpan[] } | null {
    if (this.sizes.overlap === 0 || previous.section !== this.section || previous.inTable) return null;
    const budget = Math.min(this.sizes.overlap, this.sizes.max - sep.length - next.length);
    const text = previous.text;
    const sentences = sentenceSpans(text);
    let start = -1;
    for (let i = sentences.length - 1; i > 0; i--) {
      if (text.length - sentences[i].start > budget) break;
      start = sentences[i].start;
    }
    if (start <= 0) return null;
    return { text: text.slice(start), spans: sliceSpans(previous.spans, start) };
  }

  private emit(): void {
    const cur = this.cur;
    this.cur = null;
    if (!cur || cur.text === '') return;
    const pages = cur.spans.map((s) => s.page);
    this.chunks.push({
      index: this.chunks.length,
      text: cur.text,
      headingPath: cur.headingPath,
      startPage: pages.length ? Math.min(...pages) : null,
      endPage: pages.length ? Math.max(...pages) : null,
      pageSpans: cur.spans,
    });
    this.previous = cur;
  }
}

/**
 * Splits an extracted document into chunks (see the module comment for the rules). Pure and
 * deterministic: the same document and options always give the same chunks. Sizes are in
 * characters; `targetChars` is clamped to `maxChars`, `overlapChars` to half the target.
 * Returns an empty array only for a document without any text.
 */
export function chunkDocument(doc: ExtractedDocument, options: ChunkOptions = {}): Chunk[] {
  const chunker = new Chunker(resolveSizes(options));
  for (const block of doc.blocks) {
    if (block.kind === 'heading') chunker.heading(block);
    else if (block.kind === 'table') chunker.table(block);
    else chunker.prose(block);
  }
  return chunker.finish();
}
