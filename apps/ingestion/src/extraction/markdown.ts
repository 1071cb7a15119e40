/**
 * Markdown with the `marked` lexer (GitHub-flavoured: ATX/setext headings, lists, fenced code,
 * pipe tables, block quotes). Inline markup is reduced to its plain text.
 */
import { lexer, Token, Tokens } from 'marked';
import { readTextFile } from './decode';
import { ExtractionContext } from './context';
import { formatRow } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/** Decodes the common named entities and numeric character references. */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, name: string) => {
    const lower = name.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(parseInt(lower.slice(1), 10));
    return ENTITIES[lower] ?? m;
  });
}

/** Plain text of inline tokens: emphasis and links reduced to their text, images and inline HTML dropped. */
function inlinePlain(tokens: readonly Token[] | undefined, fallback: string): string {
  if (!tokens) return decodeEntities(fallback);
  let out = '';
  for (const t of tokens) {
    switch (t.type) {
      case 'br':
        out += '\u0001';
        break;
      case 'html':
      case 'image':
        break;
      case 'codespan':
      case 'escape':
        out += t.text;
        break;
      default:
        out += 'tokens' in t && t.tokens ? inlinePlain(t.tokens, '') : decodeEntities((t as { text?: string }).text ?? '');
    }
  }
  return out;
}

/** Soft line breaks become spaces, hard breaks newlines; whitespace collapsed. */
function tidy(text: string): string {
  // eslint-disable-next-line no-control-regex -- \u0001 is the hard-break marker
  const hardBreak = /\s*\u0001\s*/g;
  return text
    .replace(/\s*\n\s*/g, ' ')
    .replace(/[ \t]{2,}/g, ' ')
    .replace(hardBreak, '\n')
    .trim();
}

function htmlToText(html: string): string {
  const visible = html.replace(/<(script|style|template)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<!--[\s\S]*?-->/g, ' ');
  return tidy(decodeEntities(visible.replace(/<br\s*\/?>/gi, '\u0001').replace(/<[^>]*>/g, ' ')));
}

function pushBlocks(tokens: readonly Token[], out: ExtractedBlock[]): void {
  for (const token of tokens) {
    switch (token.type) {
      case 'heading': {
        const t = token as Tokens.Heading;
        const text = tidy(inlinePlain(t.tokens, t.text));
        if (text) out.push({ kind: 'heading', text, page: null, level: Math.min(6, t.depth) });
        break;
      }
      case 'paragraph':
      case 'text': {
        const t = token as Tokens.Paragraph | Tokens.Text;
        const text = tidy(inlinePlain(t.tokens, t.text));
        if (text) out.push({ kind: 'paragraph', text, page: null });
        break;
      }
      case 'list':
        pushList(token as Tokens.List, out);
        break;
      case 'code': {
        const text = (token as Tokens.Code).text.replace(/\s+$/, '');
        if (text.trim()) out.push({ kind: 'paragraph', text, page: null });
        break;
      }
      case 'table': {
        const t = token as Tokens.Table;
        const header = formatRow(t.header.map((c) => tidy(inlinePlain(c.tokens, c.text))));
        const rows = t.rows.map((r) => formatRow(r.map((c) => tidy(inlinePlain(c.tokens, c.text))))).filter(Boolean);
        out.push({ kind: 'table', text: [header, ...rows].join('\n'), page: null, tableHeader: header });
        break;
      }
      case 'blockquote':
        pushBlocks((token as Tokens.Blockquote).tokens, out);
        break;
      case 'html': {
        const text = htmlToText((token as Tokens.HTML).text);
        if (text) out.push({ kind: 'paragraph', text, page: null });
        break;
      }
      default:
        // space, hr, def: no text
        break;
    }
  }
}

/** The items of a list; items of ordered lists keep their number ("2. ..."). */
function pushList(list: Tokens.List, out: ExtractedBlock[]): void {
  const start = typeof list.start === 'number' ? list.start : 1;
  list.items.forEach((item, i) => pushListItem(item, list.ordered ? `${start + i}. ` : '', out));
}

/** A list item: its own text as one 'list' block, nested lists and blocks after it. */
function pushListItem(item: Tokens.ListItem, marker: string, out: ExtractedBlock[]): void {
  const own: string[] = [];
  const nested: Token[] = [];
  for (const t of item.tokens) {
    if ((t.type === 'text' || t.type === 'paragraph') && nested.length === 0) {
      own.push(tidy(inlinePlain((t as Tokens.Text).tokens, (t as Tokens.Text).text)));
    } else if (t.type !== 'space') {
      nested.push(t);
    }
  }
  const text = own.filter(Boolean).join('\n');
  if (text) out.push({ kind: 'list', text: marker + (item.task ? `[${item.checked ? 'x' : ' '}] ${text}` : text), page: null });
  for (const t of nested) {
    if (t.type === 'list') pushList(t as Tokens.List, out);
    else pushBlocks([t], out);
  }
}

/** Converts Markdown text into blocks (`page: null`); a leading YAML front matter is skipped. */
export function markdownToBlocks(markdown: string): ExtractedBlock[] {
  const body = markdown.replace(/^---\n[\s\S]*?\n(?:---|\.\.\.)\n/, '');
  const out: ExtractedBlock[] = [];
  pushBlocks(lexer(body, { gfm: true }), out);
  return out;
}

/**
 * Extracts a Markdown file. Title: the first level-1 heading, else the first heading, else null.
 * Throws `NO_TEXT` for an empty document.
 */
export async function extractMarkdown(_ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const blocks = markdownToBlocks(await readTextFile(filePath));
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', 'The Markdown file contains no text; upload a file with content.');
  const title = (blocks.find((b) => b.kind === 'heading' && b.level === 1) ?? blocks.find((b) => b.kind === 'heading'))?.text ?? null;
  return { blocks, pageCount: null, title };
}
