/**
 * ODT (OpenDocument Text, LibreOffice Writer): the package is checked like the Office Open XML
 * formats (a ZIP within the zip-bomb limits), opened with JSZip, and the body of `content.xml`
 * (`office:body/office:text`) walked with cheerio in XML mode (ODF 1.3 part 3, "Text Content"):
 * headings (`text:h`) keep their outline level, paragraphs (`text:p`; one in the "Title" style or a
 * style with an outline level is a heading), list items (`text:list`, nested ones flattened in
 * order), tables (header = first row); footnotes and endnotes (`text:note`) as a paragraph right
 * after the block that cites them, text boxes (`draw:frame`) after it too. Running headers and
 * footers (in styles.xml), comments (`office:annotation`), tracked deletions, hidden text, images
 * and generated indexes (a table of contents repeats the headings) are left out. ODT has no fixed
 * pages, so every block has `page: null`.
 */
import * as cheerio from 'cheerio';
import type { AnyNode, Element } from 'domhandler';
import JSZip from 'jszip';
import { checkAborted, ExtractionContext, raceAbort } from './context';
import { readOfficePackage } from './office';
import { cleanCell, tableBlocks } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';

const LABEL = 'OpenDocument text';
const CORRUPT = 'The OpenDocument text could not be read; it may be damaged. Open it in LibreOffice Writer, save a new copy and upload that.';

/** Deepest element nesting followed (sections, lists, frames, spans): real documents stay far below it. */
const MAX_DEPTH = 200;
/** Most copies of a cell with `table:number-columns-repeated` (Writer writes 1; only column alignment needs more). */
const MAX_CELL_REPEAT = 16;

/** Elements whose content is not part of the text: comments, tracked deletions, hidden text, images, generated indexes, declarations. */
const SKIPPED = new Set([
  'office:annotation',
  'office:annotation-end',
  'text:tracked-changes',
  'text:hidden-text',
  'text:hidden-paragraph',
  'text:number', // the rendered list or outline number ("1.2"), not the author's text
  'draw:image',
  'svg:title',
  'svg:desc',
  'office:forms',
  'text:variable-decls',
  'text:sequence-decls',
  'text:user-field-decls',
  'text:dde-connection-decls',
  'text:table-of-content',
  'text:illustration-index',
  'text:table-index',
  'text:object-index',
  'text:user-index',
  'text:alphabetical-index',
  'table:table-column',
  'table:table-columns',
  'table:table-column-group',
  'table:table-header-columns',
]);

/** Text of one paragraph as it reads, with the notes and drawings (text boxes) anchored in it. */
interface Inline {
  text: string;
  notes: Element[];
  drawings: Element[];
}

function isElement(node: AnyNode): node is Element {
  return node.type === 'tag';
}

function tooDeep(depth: number): void {
  if (depth > MAX_DEPTH) throw new ExtractionError('CORRUPT_FILE', CORRUPT);
}

/** Whitespace of one paragraph collapsed; line breaks (`text:line-break`) kept as "\n". */
function clean(text: string | undefined): string {
  return (text ?? '')
    .split('\n')
    .map((line) => line.replace(/[ \t\r\f\u00a0]+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

/**
 * Appends the text of `el`'s content to `out` (ODF white-space rules: runs of spaces, tabs and
 * newlines in the XML are one space; `text:s` a space — its `text:c` count does not matter once
 * spaces are collapsed — `text:tab` a tab, `text:line-break` a line break). Notes and drawings are
 * set aside in `out` for the caller.
 */
function inline(el: Element, out: Inline, depth: number): void {
  tooDeep(depth);
  for (const child of el.children) {
    if (child.type === 'text') {
      out.text += child.data.replace(/[ \t\r\n]+/g, ' ');
      continue;
    }
    if (!isElement(child)) continue;
    const name = child.name;
    if (name === 'text:s') out.text += ' ';
    else if (name === 'text:tab') out.text += '\t';
    else if (name === 'text:line-break') out.text += '\n';
    else if (name === 'text:note') out.notes.push(child);
    else if (SKIPPED.has(name)) continue;
    else if (name.startsWith('draw:') && name !== 'draw:a') out.drawings.push(child);
    // Spans, links (text:a, draw:a), fields (their shown value), bookmarks, ruby, note references.
    else inline(child, out, depth + 1);
  }
}

/** Style name -> heading level of the paragraph styles of content.xml and styles.xml ("Title" is 1; a style's outline level). */
function headingStyles(xmls: readonly string[]): (style: string | undefined) => number | null {
  const styles = new Map<string, { parent: string | undefined; outline: string | undefined }>();
  for (const xml of xmls) {
    const $ = cheerio.load(xml, { xml: true });
    $('style\\:style[style\\:family="paragraph"]').each((_, el) => {
      const name = $(el).attr('style:name');
      if (name) styles.set(name, { parent: $(el).attr('style:parent-style-name'), outline: $(el).attr('style:default-outline-level') });
    });
  }
  return (style) => {
    let cur = style;
    for (let hops = 0; cur && hops < 20; hops++) {
      const info = styles.get(cur);
      // An empty outline level is "body text": a heading style turned back into a paragraph.
      if (info?.outline !== undefined) return info.outline === '' ? null : clampLevel(Number(info.outline));
      if (cur === 'Title') return 1;
      cur = info?.parent;
    }
    return null;
  };
}

function clampLevel(level: number): number | null {
  return Number.isInteger(level) && level >= 1 ? Math.min(6, level) : null;
}

/** Walks `office:text` into blocks, in document order. */
class OdtWalker {
  readonly blocks: ExtractedBlock[] = [];

  constructor(
    private readonly ctx: ExtractionContext,
    private readonly styleLevel: (style: string | undefined) => number | null,
  ) {}

  walk(nodes: readonly AnyNode[], depth: number, inList: boolean): void {
    tooDeep(depth);
    for (const node of nodes) if (isElement(node)) this.element(node, depth, inList);
  }

  private element(el: Element, depth: number, inList: boolean): void {
    if (this.blocks.length % 200 === 0) checkAborted(this.ctx);
    switch (el.name) {
      case 'text:h': {
        const level = clampLevel(Number(el.attribs['text:outline-level'] ?? '1')) ?? 1;
        this.leaf(el, depth, 'heading', level);
        return;
      }
      case 'text:p': {
        const level = this.styleLevel(el.attribs['text:style-name']);
        if (level !== null) this.leaf(el, depth, 'heading', level);
        else this.leaf(el, depth, inList ? 'list' : 'paragraph');
        return;
      }
      case 'text:list':
        this.walk(el.children, depth + 1, true);
        return;
      case 'table:table':
        this.table(el, depth);
        return;
      default:
        // Sections, list items, frames and their text boxes, shapes, bibliography: their content in order.
        if (!SKIPPED.has(el.name)) this.walk(el.children, depth + 1, inList);
    }
  }

  /** One heading, paragraph or list item, then its notes and the text boxes anchored in it. */
  private leaf(el: Element, depth: number, kind: 'heading' | 'paragraph' | 'list', level?: number): void {
    const content: Inline = { text: '', notes: [], drawings: [] };
    inline(el, content, depth + 1);
    const text = clean(content.text);
    if (text) {
      if (kind === 'heading') this.blocks.push({ kind, text: text.replace(/\n/g, ' '), page: null, level: level ?? 1 });
      else this.blocks.push({ kind, text, page: null });
    }
    this.after(content, depth);
  }

  /** Notes as one paragraph each (their paragraphs joined), then drawings' text as blocks. */
  private after(content: Inline, depth: number): void {
    for (const note of content.notes) {
      const body = note.children.find((c): c is Element => isElement(c) && c.name === 'text:note-body');
      if (!body) continue;
      const inner: Inline = { text: '', notes: [], drawings: [] };
      paragraphsText(body, inner, depth + 1);
      const text = clean(inner.text);
      if (text) this.blocks.push({ kind: 'paragraph', text, page: null });
      this.after(inner, depth + 1);
    }
    for (const drawing of content.drawings) this.walk(drawing.children, depth + 1, false);
  }

  /** One table: cells' text by row; a table of one column is ordinary content (a layout table). */
  private table(el: Element, depth: number): void {
    checkAborted(this.ctx);
    const rows: Element[][] = [];
    collectRows(el, rows, depth + 1);
    const width = Math.max(0, ...rows.map((row) => row.filter((c) => cleanCell(cellText(c, depth).text) !== '').length));
    if (width <= 1) {
      for (const row of rows) for (const cell of row) this.walk(cell.children, depth + 1, false);
      return;
    }
    const contents = rows.map((row) => row.flatMap((cell) => Array<Inline>(cellRepeat(cell)).fill(cellText(cell, depth))));
    const texts = contents.map((row) => row.map((c) => c.text)).filter((row) => row.some((t) => cleanCell(t) !== ''));
    if (texts.length === 0) return;
    this.blocks.push(...tableBlocks(texts[0], texts.slice(1), null));
    for (const row of rows) for (const cell of row) this.after(cellText(cell, depth), depth + 1);
  }
}

/** Rows of a table in order (inside header rows, row groups), each as its cells (covered cells of merged ones included, as empty). */
function collectRows(el: Element, rows: Element[][], depth: number): void {
  tooDeep(depth);
  for (const child of el.children) {
    if (!isElement(child)) continue;
    if (child.name === 'table:table-row') {
      rows.push(child.children.filter((c): c is Element => isElement(c) && (c.name === 'table:table-cell' || c.name === 'table:covered-table-cell')));
    } else if (child.name === 'table:table-header-rows' || child.name === 'table:table-rows' || child.name === 'table:table-row-group') {
      collectRows(child, rows, depth + 1);
    }
  }
}

function cellRepeat(cell: Element): number {
  const n = Number(cell.attribs['table:number-columns-repeated'] ?? '1');
  return Number.isInteger(n) && n > 1 ? Math.min(n, MAX_CELL_REPEAT) : 1;
}

const cellTexts = new WeakMap<Element, Inline>();

/** Text of a table cell: its paragraphs (in lists, nested tables too) joined by spaces; computed once per cell. */
function cellText(cell: Element, depth: number): Inline {
  let content = cellTexts.get(cell);
  if (!content) {
    content = { text: '', notes: [], drawings: [] };
    if (cell.name === 'table:table-cell') paragraphsText(cell, content, depth + 1);
    cellTexts.set(cell, content);
  }
  return content;
}

/** Appends the text of every paragraph and heading under `el` (a note body, a table cell) to `out`, separated by spaces. */
function paragraphsText(el: Element, out: Inline, depth: number): void {
  tooDeep(depth);
  for (const child of el.children) {
    if (!isElement(child) || SKIPPED.has(child.name)) continue;
    if (child.name === 'text:p' || child.name === 'text:h') {
      if (out.text) out.text += ' ';
      inline(child, out, depth + 1);
    } else paragraphsText(child, out, depth + 1);
  }
}

/** Throws `ENCRYPTED` when META-INF/manifest.xml says a part is encrypted (ODF 1.3 part 2, 3.8 `manifest:encryption-data`). */
async function checkEncryption(zip: JSZip): Promise<void> {
  const manifest = await zip.file('META-INF/manifest.xml')?.async('string');
  if (!manifest) return;
  const $ = cheerio.load(manifest, { xml: true });
  if ($('manifest\\:file-entry > manifest\\:encryption-data').length > 0) {
    throw new ExtractionError('ENCRYPTED', `The ${LABEL} is password-protected; upload a copy without a password.`);
  }
}

async function readParts(zip: JSZip): Promise<{ content: string; styles: string | null; meta: string | null }> {
  await checkEncryption(zip);
  const content = await zip.file('content.xml')?.async('string');
  if (!content) throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  const styles = (await zip.file('styles.xml')?.async('string')) ?? null;
  const meta = (await zip.file('meta.xml')?.async('string')) ?? null;
  return { content, styles, meta };
}

/**
 * Extracts an ODT file (`application/vnd.oasis.opendocument.text`); blocks have `page: null` and
 * `pageCount` is null. Title: the first heading, else the document's title property (meta.xml
 * `dc:title`), else null. Throws `ENCRYPTED` (saved with a password), `CORRUPT_FILE` (not a ZIP
 * package or not readable as ODT), `TOO_LARGE` (the package expands beyond `maxUnzippedBytes` or
 * at a zip-bomb ratio), `NO_TEXT` (no text at all).
 */
export async function extractOdt(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const buffer = await readOfficePackage(filePath, LABEL, 'odt', { ...DEFAULT_ZIP_LIMITS, maxUncompressedBytes: ctx.maxUnzippedBytes });
  let blocks: ExtractedBlock[];
  let propertyTitle = '';
  try {
    const zip = await raceAbort(ctx, JSZip.loadAsync(buffer));
    const parts = await raceAbort(ctx, readParts(zip));
    checkAborted(ctx);
    const $ = cheerio.load(parts.content, { xml: true });
    const body = $('office\\:document-content > office\\:body > office\\:text').get(0);
    if (!body) throw new ExtractionError('CORRUPT_FILE', CORRUPT);
    const walker = new OdtWalker(ctx, headingStyles(parts.styles ? [parts.styles, parts.content] : [parts.content]));
    walker.walk(body.children, 0, false);
    blocks = walker.blocks;
    if (parts.meta) propertyTitle = clean(cheerio.load(parts.meta, { xml: true })('dc\\:title').first().text()).replace(/\n/g, ' ');
  } catch (e) {
    if (e instanceof ExtractionError || ctx.signal.aborted) throw e;
    throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  }
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', `The ${LABEL} contains no text; upload a document with content.`);
  const title = blocks.find((b) => b.kind === 'heading')?.text ?? (propertyTitle || null);
  return { blocks, pageCount: null, title };
}
