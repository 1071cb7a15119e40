/**
 * ODT (OpenDocument Text, LibreOffice Writer) with officeparser: the package is checked like the
 * Office Open XML formats (a ZIP within the zip-bomb limits), then parsed into officeparser's
 * document tree, which maps onto blocks: headings keep their outline level, paragraphs, list
 * items, tables (header = first row), footnotes and endnotes as a paragraph right after the block
 * that cites them. Running headers and footers, comments and images are left out; ODT has no
 * fixed pages, so every block has `page: null`.
 */
import { OfficeErrorType, OfficeParser, type OfficeContentNode, type OfficeError } from 'officeparser';
import { checkAborted, ExtractionContext, raceAbort } from './context';
import { readOfficePackage } from './office';
import { cleanCell, tableBlocks } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';

const LABEL = 'OpenDocument text';
const CORRUPT = 'The OpenDocument text could not be read; it may be damaged. Open it in LibreOffice Writer, save a new copy and upload that.';

/** Whitespace of one paragraph collapsed; line breaks (`text:line-break`) kept as "\n". */
function clean(text: string | undefined): string {
  return (text ?? '')
    .split('\n')
    .map((line) => line.replace(/[ \t\r\f\u00a0]+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

/** Walks officeparser's tree into blocks, in document order. */
class OdtWalker {
  readonly blocks: ExtractedBlock[] = [];

  constructor(private readonly ctx: ExtractionContext) {}

  walk(nodes: readonly OfficeContentNode[] | undefined): void {
    for (const node of nodes ?? []) this.node(node);
  }

  private node(node: OfficeContentNode): void {
    // A block of text (heading, paragraph, list item): its footnotes and endnotes (attached to its
    // text runs) follow it, so a chunk holds the sentence with its note.
    let leaf = true;
    switch (node.type) {
      case 'heading': {
        const text = clean(node.text).replace(/\n/g, ' ');
        const level = Number((node.metadata as { level?: number } | undefined)?.level);
        if (text) this.blocks.push({ kind: 'heading', text, page: null, level: Number.isInteger(level) ? Math.min(6, Math.max(1, level)) : 1 });
        break;
      }
      case 'paragraph':
      case 'code':
      case 'definitionTerm':
      case 'definitionDescription':
        this.text('paragraph', node.text);
        break;
      case 'list':
        this.text('list', node.text);
        break;
      case 'table':
        this.table(node);
        leaf = false;
        break;
      // Not part of the text a user searches: images, charts and drawings (text boxes come as
      // their own paragraphs), comments, breaks; headers and footers are not requested.
      case 'image':
      case 'chart':
      case 'comment':
      case 'break':
      case 'header':
      case 'footer':
        leaf = false;
        break;
      default:
        // Containers (sections, frames, admonitions, definition lists…): their content in order.
        if (node.children?.length) {
          this.walk(node.children);
          leaf = false;
        } else this.text('paragraph', node.text);
    }
    if (leaf) for (const note of collectNotes(node)) this.text('paragraph', note.text);
  }

  private text(kind: 'paragraph' | 'list', raw: string | undefined): void {
    const text = clean(raw);
    if (text) this.blocks.push({ kind, text, page: null });
  }

  /** One table: cells' text by row; a table of one column is ordinary content (a layout table). */
  private table(node: OfficeContentNode): void {
    checkAborted(this.ctx);
    const rows = (node.children ?? []).filter((r) => r.type === 'row');
    const cells = rows.map((r) => (r.children ?? []).filter((c) => c.type === 'cell'));
    const width = Math.max(0, ...cells.map((row) => row.filter((c) => cleanCell(c.text ?? '') !== '').length));
    if (width <= 1) {
      for (const row of cells) for (const cell of row) this.walk(cell.children);
      return;
    }
    const texts = cells.map((row) => row.map((c) => c.text ?? '')).filter((row) => row.some((t) => cleanCell(t) !== ''));
    if (texts.length === 0) return;
    this.blocks.push(...tableBlocks(texts[0], texts.slice(1), null));
    for (const row of cells) for (const cell of row) for (const note of collectNotes(cell)) this.text('paragraph', note.text);
  }
}

/** The notes of `node` and of everything inside it (text runs, a table cell's paragraphs). */
function collectNotes(node: OfficeContentNode): OfficeContentNode[] {
  return [...(node.notes ?? []), ...(node.children ?? []).flatMap(collectNotes)];
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
  let ast;
  try {
    ast = await raceAbort(
      ctx,
      OfficeParser.parseOffice(buffer, {
        fileType: 'odt',
        abortSignal: ctx.signal,
        decompressionLimits: { maxUncompressedBytes: ctx.maxUnzippedBytes },
        ignoreComments: true,
        ignoreHeadersAndFooters: true,
        extractAttachments: false,
        ocr: false,
        // Non-fatal issues (an unreadable image, a style it does not know) are not the user's to fix.
        onWarning: () => undefined,
      }),
    );
  } catch (e) {
    if (e instanceof ExtractionError || ctx.signal.aborted) throw e;
    const code = (e as OfficeError | null)?.officeIssue?.code;
    if (code === OfficeErrorType.PASSWORD_REQUIRED || code === OfficeErrorType.PASSWORD_INCORRECT || code === OfficeErrorType.DOCUMENT_DECRYPTION_FAILED) {
      throw new ExtractionError('ENCRYPTED', `The ${LABEL} is password-protected; upload a copy without a password.`);
    }
    throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  }
  const walker = new OdtWalker(ctx);
  walker.walk(ast.content);
  const { blocks } = walker;
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', `The ${LABEL} contains no text; upload a document with content.`);
  const propertyTitle = clean(ast.metadata?.title).replace(/\n/g, ' ');
  const title = blocks.find((b) => b.kind === 'heading')?.text ?? (propertyTitle || null);
  return { blocks, pageCount: null, title };
}
