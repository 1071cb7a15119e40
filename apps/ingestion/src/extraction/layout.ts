/**
 * Heuristics that turn the plain text of a page (pdftotext or tesseract output: lines, blank lines
 * between text blocks, no font information) into headings, paragraphs and list items.
 */
import { ExtractedBlock } from './types';

/** "4.2 Package relationships", "3.2. SAR File Concepts": section number, then a short title. */
const NUMBERED_HEADING_RE = /^(\d{1,2}(?:\.\d{1,3}){0,5})\.?\s+(\S.*)$/;
/** "SEC. 4. APPLICABILITY OF THIS ACT", "Chapter 2 - Scope", "Appendix A: Terms", "Part IV". */
const NAMED_HEADING_RE = /^(?:chapter|section|sec\.|part|appendix|annex|article)\s+(?:\d{1,3}|[A-Z]|[IVXLC]{1,6})\b\.?(?:\s*[:.\u2013\u2014-]\s*|\s+|$)/i;
/** Bullet glyphs that start a list item. */
const BULLET_RE = /^(?:[\u2022\u25cf\u25aa\u25a0\u25e6\u2023\u2043\u2219\u00b7\uf0b7\uf0a7*\u2013-])\s+/;
/** Enumerators that start an item: "(a)", "(12)", "a)", "1.", "iv." */
const ENUM_RE = /^(?:\(\s*(?:\d{1,3}|[a-zA-Z]{1,2}|[ivxlcdm]{1,6})\s*\)|(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})[.)])\s+/;
/** Dot leaders of tables of contents: "Scope . . . . . . 12". */
const DOT_LEADER_RE = /(?:\s?\.){4,}\s*/g;
const HAS_DOT_LEADER_RE = /(?:\s?\.){4,}/;
/** A line ending a sentence (or a clause that introduces something). */
const ENDS_SENTENCE_RE = /[.!?:;]["'\u201d\u2019)]*$/;
/** Small words that stay lowercase in Title Case. */
const SMALL_WORDS = new Set([
  'a',
  'an',
  'the',
  'and',
  'or',
  'nor',
  'but',
  'of',
  'to',
  'in',
  'on',
  'at',
  'by',
  'for',
  'with',
  'from',
  'as',
  'into',
  'via',
  'vs',
  'per',
  'de',
  'la',
  'el',
  'y',
  'en',
  'del',
  'los',
  'las',
]);

/** Normalises one line: no control characters, non-breaking spaces as spaces, single spaces, trimmed. */
export function cleanLine(line: string): string {
  return (
    line
      // eslint-disable-next-line no-control-regex -- removes the control characters extraction leaves
      .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g, '')
      .replace(/[\u00a0\u2000-\u200a\u202f\u205f\u3000\t]/g, ' ')
      .replace(/\u00ad/g, '')
      .replace(/ {2,}/g, ' ')
      .trim()
  );
}

/**
 * Joins wrapped lines into one paragraph: a line ending in a hyphen after a letter, followed by a
 * line starting with a lowercase letter, is joined without the hyphen ("regu-" + "lation" ->
 * "regulation"); before a capital or digit the hyphen stays ("Debian-" + "Specific"); other lines
 * are joined with one space.
 */
export function joinLines(lines: readonly string[]): string {
  let out = '';
  for (const line of lines) {
    if (!line) continue;
    if (!out) out = line;
    else if (/\p{L}-$/u.test(out) && /^\p{Ll}/u.test(line)) out = out.slice(0, -1) + line;
    else if (/\p{L}-$/u.test(out) && /^[\p{Lu}\p{N}]/u.test(line))
      out += line; // compound: "Debian-" + "Specific"
    else out += ' ' + line;
  }
  return out.replace(DOT_LEADER_RE, ' \u2026 ').replace(/ {2,}/g, ' ').trim();
}

function wordsOf(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

function letterCount(text: string): number {
  return (text.match(/\p{L}/gu) ?? []).length;
}

/** True when the text reads like a title: mostly capitalised words, no sentence punctuation at the end. */
function isTitleLike(title: string, maxWords: number): boolean {
  if (title.length < 2 || title.length > 100) return false;
  if (/[.,;:]$/.test(title) || HAS_DOT_LEADER_RE.test(title)) return false;
  const words = wordsOf(title);
  if (words.length === 0 || words.length > maxWords) return false;
  if (/^\d+$/.test(words[words.length - 1])) return false; // page reference or number, not a title
  if (letterCount(title) < Math.max(2, title.replace(/\s/g, '').length * 0.6)) return false;
  return /^["'\u201c(]?\p{Lu}/u.test(title);
}

/** Title Case or ALL CAPS: every word of 4+ letters (and the first) starts with a capital. */
function isCapitalised(text: string): boolean {
  const words = wordsOf(text).filter((w) => /\p{L}/u.test(w));
  if (words.length === 0) return false;
  return words.every((w, i) => {
    const core = w.replace(/^[^\p{L}\p{N}]+/u, '');
    if (!core) return true;
    if (i > 0 && SMALL_WORDS.has(core.toLowerCase())) return true;
    if (i > 0 && core.replace(/[^\p{L}]/gu, '').length < 4) return true;
    return /^[\p{Lu}\p{N}]/u.test(core);
  });
}

function isAllCaps(text: string): boolean {
  const letters = text.replace(/[^\p{L}]/gu, '');
  return letters.length >= 3 && letters === letters.toUpperCase() && letters !== letters.toLowerCase();
}

/**
 * Heading level of a line that is a numbered or named section title ("4.2 Package relationships"
 * -> 2, "SEC. 4. APPLICABILITY" -> 1), or null when the line is not one.
 */
export function numberedHeadingLevel(line: string): number | null {
  if (line.length > 120) return null;
  const named = NAMED_HEADING_RE.exec(line);
  if (named) {
    const rest = line.slice(named[0].length);
    if (rest === '' || isTitleLike(rest, 14) || isAllCaps(rest)) return 1;
    return null;
  }
  const m = NUMBERED_HEADING_RE.exec(line);
  if (!m) return null;
  const title = m[2];
  if (!isTitleLike(title, 14)) return null;
  if (wordsOf(title).length > 3 && !isCapitalised(title) && /[.!?](?:\s|$)/.test(title)) return null;
  const depth = m[1].split('.').length;
  // "1 The term ..." footnotes and "(1)" enumerations read like prose: a single number needs a short title.
  if (depth === 1 && wordsOf(title).length > 8) return null;
  return Math.min(6, depth);
}

/** A one-line block that looks like an unnumbered heading; returns its level (1 for ALL CAPS, 2 for Title Case). */
function plainHeadingLevel(line: string): number | null {
  if (line.length < 3 || line.length > 80) return null;
  if (!isTitleLike(line, 10)) return null;
  if (isAllCaps(line)) return 1;
  if (isCapitalised(line)) return 2;
  return null;
}

/**
 * Level of a block that is an unnumbered heading on its own: one Title Case or ALL CAPS line (or
 * two ALL CAPS lines) followed by a block of body text; null otherwise.
 */
function standaloneHeadingLevel(lines: readonly string[], next: readonly string[] | undefined): number | null {
  if (!next || !isBodyText(next) || lines.length > 2) return null;
  const text = lines.join(' ');
  if (numberedHeadingLevel(text) !== null) return null;
  if (lines.length === 2 && !isAllCaps(text)) return null;
  return plainHeadingLevel(text);
}

/** A block of lines reads like body text: at least two lines or a long line. */
function isBodyText(lines: readonly string[]): boolean {
  const text = lines.join(' ');
  return lines.length >= 2 ? text.length >= 60 : text.length >= 100;
}

function startsItem(line: string): boolean {
  return BULLET_RE.test(line) || ENUM_RE.test(line);
}

/**
 * Splits the lines of one blank-line-separated block into paragraphs and list items. A new
 * paragraph starts at a bullet, at an enumerator after a line that ends a sentence, and after a
 * line that ends a sentence while being clearly shorter than the block's longest line.
 */
function splitParagraphs(lines: readonly string[], page: number | null): ExtractedBlock[] {
  const out: ExtractedBlock[] = [];
  const maxLen = Math.max(...lines.map((l) => l.length));
  let current: string[] = [];
  let kind: 'paragraph' | 'list' = 'paragraph';
  const flush = () => {
    const text = joinLines(current);
    if (text) out.push({ kind, text, page });
    current = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const prev = current.length > 0 ? current[current.length - 1] : null;
    if (prev !== null) {
      const prevEndsSentence = ENDS_SENTENCE_RE.test(prev);
      const bullet = BULLET_RE.test(line) || /^[\u2022\u25cf\u25aa\uf0b7]$/.test(prev);
      const breakHere =
        (bullet && !/^[\u2022\u25cf\u25aa\uf0b7]$/.test(prev)) ||
        (prevEndsSentence && ENUM_RE.test(line)) ||
        (prevEndsSentence && prev.length < maxLen * 0.75 && maxLen >= 40);
      if (breakHere) flush();
    }
    if (current.length === 0) kind = startsItem(line) || /^[\u2022\u25cf\u25aa\uf0b7]$/.test(line) ? 'list' : 'paragraph';
    current.push(line);
  }
  flush();
  return out;
}

/**
 * Turns the text of one page into blocks. Blocks are separated by blank lines; a numbered section
 * title on the first line of a block becomes a heading; a one-line Title Case / ALL CAPS block
 * followed by body text becomes a heading; the rest becomes paragraphs and list items with
 * wrapped lines joined.
 */
export function pageTextToBlocks(text: string, page: number | null): ExtractedBlock[] {
  const rawBlocks: string[][] = [];
  let cur: string[] = [];
  for (const raw of text.split(/\r?\n|\r/)) {
    const line = cleanLine(raw);
    if (line) cur.push(line);
    else if (cur.length) {
      rawBlocks.push(cur);
      cur = [];
    }
  }
  if (cur.length) rawBlocks.push(cur);

  const out: ExtractedBlock[] = [];
  for (let b = 0; b < rawBlocks.length; b++) {
    const lines = rawBlocks[b];
    const plain = standaloneHeadingLevel(lines, rawBlocks[b + 1]);
    if (plain !== null) {
      out.push({ kind: 'heading', text: lines.join(' '), page, level: plain });
      continue;
    }
    // Numbered section titles: on the first line of a block, after a heading, or after a line that ends a sentence.
    let pending: string[] = [];
    let prevHeading = false;
    for (let i = 0; i < lines.length; i++) {
      const level: number | null = i === 0 || prevHeading || ENDS_SENTENCE_RE.test(lines[i - 1]) ? numberedHeadingLevel(lines[i]) : null;
      prevHeading = level !== null;
      if (level === null) {
        pending.push(lines[i]);
        continue;
      }
      if (pending.length) out.push(...splitParagraphs(pending, page));
      pending = [];
      out.push({ kind: 'heading', text: lines[i], page, level });
    }
    if (pending.length) out.push(...splitParagraphs(pending, page));
  }
  return out;
}

/** Normalised form of a header/footer line: digits and roman page numbers folded, case folded. */
function runningKey(line: string): string {
  return line.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ').trim();
}

/** A line that is only a page number: "7", "- 7 -", "Page 7", "Page 7 of 40", "vii". */
function isPageNumberLine(line: string): boolean {
  return /^(?:page\s+)?[-\u2013\u2014(\s]*\d{1,4}[-\u2013\u2014)\s]*(?:of\s+\d{1,4})?$/i.test(line) || /^[ivxlc]{1,7}$/i.test(line);
}

const EDGE_LINES = 3;

/** Section titles compared loosely: "Chapter 4. Source packages" ~ "4 Source packages", "4.4." ~ "4.4". */
function headingKey(line: string): string {
  return line
    .toLowerCase()
    .replace(/^(?:chapter|section|part|appendix)\s+/, '')
    .replace(/(\d)\.(?=\s|$)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Removes running headers and footers from the pages of one document: page-number lines at the top
 * or bottom of a page, and lines among the first/last three of a page that repeat on many pages
 * (same text on 3+ pages, or the same text up to numbers on 3+ pages and 40% of the pages), and
 * section titles at the bottom of a page that repeat a heading found elsewhere (running footers
 * naming the current section). Only documents of 3+ pages are considered for repeats. Returns new page texts; line breaks inside
 * the remaining text are kept.
 */
export function stripRunningLines(pages: readonly string[]): string[] {
  const pageLines = pages.map((p) => p.split(/\r?\n/));
  const edgeIndexes = pageLines.map((lines) => {
    const nonEmpty = lines.map((l, i) => (cleanLine(l) ? i : -1)).filter((i) => i >= 0);
    return { top: nonEmpty.slice(0, EDGE_LINES), bottom: nonEmpty.slice(-EDGE_LINES).reverse() };
  });
  const exactCount = new Map<string, number>();
  const keyCount = new Map<string, number>();
  if (pages.length >= 3) {
    pageLines.forEach((lines, p) => {
      const seenExact = new Set<string>();
      const seenKey = new Set<string>();
      for (const i of [...edgeIndexes[p].top, ...edgeIndexes[p].bottom]) {
        const line = cleanLine(lines[i]);
        seenExact.add(line);
        seenKey.add(runningKey(line));
      }
      seenExact.forEach((l) => exactCount.set(l, (exactCount.get(l) ?? 0) + 1));
      seenKey.forEach((k) => keyCount.set(k, (keyCount.get(k) ?? 0) + 1));
    });
  }
  const headingCount = new Map<string, number>();
  if (pages.length >= 3) {
    for (const lines of pageLines) {
      for (const raw of lines) {
        const line = cleanLine(raw);
        if (line && numberedHeadingLevel(line) !== null) headingCount.set(headingKey(line), (headingCount.get(headingKey(line)) ?? 0) + 1);
      }
    }
  }
  const pagesWithText = edgeIndexes.filter((e) => e.top.length > 0).length;
  const keyThreshold = Math.max(3, Math.ceil(pagesWithText * 0.4));
  const isRunning = (line: string) => isPageNumberLine(line) || (exactCount.get(line) ?? 0) >= 3 || (keyCount.get(runningKey(line)) ?? 0) >= keyThreshold;

  return pageLines.map((lines, p) => {
    const drop = new Set<number>();
    for (const i of edgeIndexes[p].top) {
      if (!isRunning(cleanLine(lines[i]))) break;
      drop.add(i);
    }
    for (const i of edgeIndexes[p].bottom) {
      const line = cleanLine(lines[i]);
      const sectionFooter = numberedHeadingLevel(line) !== null && (headingCount.get(headingKey(line)) ?? 0) >= 2;
      if (!isRunning(line) && !sectionFooter) break;
      drop.add(i);
    }
    return drop.size ? lines.filter((_, i) => !drop.has(i)).join('\n') : pages[p];
  });
}
