/**
 * HTML to blocks with cheerio. Page chrome (scripts, navigation, site headers and footers,
 * sidebars, forms, Sphinx navigation) is dropped; headings, paragraphs, lists, preformatted text
 * and tables are kept in document order. Also used for the HTML that mammoth makes of DOCX files.
 */
import * as cheerio from 'cheerio';
import type { AnyNode, Element } from 'domhandler';
import { readTextFile } from './decode';
import { ExtractionContext } from './context';
import { cleanCell, formatRow } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

/** Never content. */
const ALWAYS_DROPPED = 'script, style, noscript, template, iframe, object, embed, svg, canvas, head, button, select, option, input, textarea';
/** Site chrome of web pages (not used for DOCX). */
const CHROME =
  'nav, aside:not(.footnote):not(.footnote-list), form, [role=navigation], [role=banner], [role=contentinfo], [role=search], [hidden], [aria-hidden=true], ' +
  '.sphinxsidebar, .related, .headerlink, .footer, #searchbox, .skip-link, .breadcrumb, .breadcrumbs, .navbar, .sidebar, .toc-drawer, ' +
  '[style*="display: none"], [style*="display:none"]';

const BLOCK_TAGS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'caption',
  'center',
  'dd',
  'details',
  'dialog',
  'dir',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hgroup',
  'hr',
  'html',
  'li',
  'main',
  'menu',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
]);

export interface HtmlOptions {
  /** Drop web-page chrome (navigation, headers/footers outside the main content, sidebars). */
  dropChrome: boolean;
}

function isElement(node: AnyNode): node is Element {
  return node.type === 'tag' || node.type === 'script' || node.type === 'style';
}

/** Collapses whitespace of inline text; "\n" markers from <br> survive as line breaks. */
function normalizeInline(text: string): string {
  return (
    text
      .replace(/[ \t\r\n\f\u00a0]+/g, ' ')
      // eslint-disable-next-line no-control-regex -- \u0001 is the line-break marker of inlineText
      .replace(/\u0001/g, '\n')
      .split('\n')
      .map((l) => l.trim())
      .join('\n')
      .replace(/\n{2,}/g, '\n')
      .trim()
  );
}

/** Raw text of inline content; <br> becomes a "\u0001" line-break marker, block children a space. */
function inlineRaw(node: AnyNode): string {
  if (node.type === 'text') return (node as unknown as { data: string }).data;
  if (!isElement(node)) return '';
  if (node.name === 'br') return '\u0001';
  if (node.name === 'img') return '';
  const inner = node.children.map(inlineRaw).join('');
  return BLOCK_TAGS.has(node.name) ? ` ${inner} ` : inner;
}

/** Text of an element or node list as one paragraph string. */
function inlineText(nodes: readonly AnyNode[]): string {
  return normalizeInline(nodes.map(inlineRaw).join(''));
}

/** Text with whitespace kept (for <pre>). */
function preText(node: AnyNode): string {
  if (node.type === 'text') return (node as unknown as { data: string }).data;
  if (!isElement(node)) return '';
  if (node.name === 'br') return '\n';
  return node.children.map(preText).join('');
}

function childElements(node: Element, names: readonly string[]): Element[] {
  return node.children.filter((c): c is Element => isElement(c) && names.includes(c.name));
}

/** Rows of a table, not descending into nested tables. */
function tableRows(table: Element): Element[] {
  const rows: Element[] = [];
  for (const child of table.children) {
    if (!isElement(child)) continue;
    if (child.name === 'tr') rows.push(child);
    else if (['thead', 'tbody', 'tfoot'].includes(child.name)) rows.push(...childElements(child, ['tr']));
  }
  return rows;
}

class BlockWalker {
  readonly blocks: ExtractedBlock[] = [];
  private inline: AnyNode[] = [];
  private kind: 'paragraph' | 'list' = 'paragraph';

  walk(node: AnyNode): void {
    if (!isElement(node)) {
      if (node.type === 'text' || node.type === 'root' || node.type === 'directive' || node.type === 'comment' || node.type === 'cdata') {
        if (node.type === 'text') this.inline.push(node);
        if (node.type === 'root') (node as unknown as { children: AnyNode[] }).children.forEach((c) => this.walk(c));
      }
      return;
    }
    const name = node.name;
    if (!BLOCK_TAGS.has(name)) {
      this.inline.push(node);
      return;
    }
    this.flush();
    if (/^h[1-6]$/.test(name)) {
      const text = inlineText(node.children).replace(/\n/g, ' ');
      if (text) this.blocks.push({ kind: 'heading', text, page: null, level: Number(name[1]) });
    } else if (name === 'p') {
      this.container(node, 'paragraph');
    } else if (name === 'ul' || name === 'ol' || name === 'menu' || name === 'dir') {
      for (const child of node.children) {
        if (isElement(child) && child.name === 'li') this.container(child, 'list');
        else this.walk(child);
      }
      this.flush();
    } else if (name === 'li') {
      this.container(node, 'list');
    } else if (name === 'pre') {
      const text = preText(node).replace(/\s+$/, '').replace(/^\n+/, '');
      if (text.trim()) this.blocks.push({ kind: 'paragraph', text, page: null });
    } else if (name === 'table') {
      this.table(node);
    } else if (name === 'hr') {
      // separator only
    } else {
      node.children.forEach((c) => this.walk(c));
      this.flush();
    }
  }

  /** An element whose inline content becomes one block of `kind`; nested blocks follow it. */
  private container(node: Element, kind: 'paragraph' | 'list'): void {
    this.flush();
    const outer = this.kind;
    this.kind = kind;
    for (const child of node.children) this.walk(child);
    this.flush();
    this.kind = outer;
  }

  /** Emits the pending inline content as one block of the current kind. */
  private flush(): void {
    if (this.inline.length === 0) return;
    const text = inlineText(this.inline);
    this.inline = [];
    if (text) this.blocks.push({ kind: this.kind, text, page: null });
  }

  private table(table: Element): void {
    const rows = tableRows(table).map((tr) => childElements(tr, ['td', 'th']).map((cell) => cleanCell(inlineText(cell.children))));
    const width = Math.max(0, ...rows.map((r) => r.filter(Boolean).length));
    if (width <= 1) {
      // A layout table (one column): its cells are ordinary content.
      for (const tr of tableRows(table)) for (const cell of childElements(tr, ['td', 'th'])) cell.children.forEach((c) => this.walk(c));
      this.flush();
      return;
    }
    const lines = rows.map(formatRow).filter((l) => l !== '');
    if (lines.length === 0) return;
    const caption = childElements(table, ['caption'])[0];
    if (caption) {
      const text = inlineText(caption.children);
      if (text) this.blocks.push({ kind: 'paragraph', text, page: null });
    }
    this.blocks.push({ kind: 'table', text: lines.join('\n'), page: null, tableHeader: lines[0] });
  }
}

/**
 * Converts an HTML string into blocks (all with `page: null`) and a title (`<title>`, else the
 * first `<h1>`, else null). With `dropChrome`, web-page chrome is removed first: navigation,
 * `aside`, forms, ARIA banner/contentinfo/search regions, Sphinx sidebars and "related" bars,
 * hidden elements, and `header`/`footer` elements that are not inside `main` or `article`.
 */
export function htmlToBlocks(html: string, options: HtmlOptions): { blocks: ExtractedBlock[]; title: string | null } {
  const $ = cheerio.load(html);
  const titleText = normalizeInline($('head > title').first().text() || $('title').first().text()).replace(/\n/g, ' ');
  $(ALWAYS_DROPPED).remove();
  if (options.dropChrome) {
    $(CHROME).remove();
    $('header, footer').each((_, el) => {
      if ($(el).closest('main, article, [role=main]').length === 0) $(el).remove();
    });
  }
  const walker = new BlockWalker();
  const root = $.root()[0] as unknown as AnyNode;
  walker.walk(root);
  const blocks = walker.blocks;
  const h1 = blocks.find((b) => b.kind === 'heading' && b.level === 1)?.text ?? null;
  return { blocks, title: titleText || h1 };
}

/**
 * Extracts an HTML file (encoding: BOM, else UTF-8, else Windows-1252). Throws `NO_TEXT` when no
 * text remains after removing the page chrome.
 */
export async function extractHtml(_ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const html = await readTextFile(filePath);
  const { blocks, title } = htmlToBlocks(html, { dropChrome: true });
  if (blocks.length === 0)
    throw new ExtractionError('NO_TEXT', 'The HTML page contains no readable text; upload the page with its content (not only scripts or navigation).');
  return { blocks, pageCount: null, title };
}
