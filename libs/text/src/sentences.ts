/** A sentence as a span of the text it was cut from: `text === source.slice(start, end)`. */
export interface SentenceSpan {
  text: string;
  start: number;
  end: number;
}

/**
 * Words that end with a period without ending a sentence (compared lowercase, without the period).
 * General English and document abbreviations: Latin (e.g., i.e., cf., vs., et al.), titles, references
 * (Sec., Art., No., Fig., pp.), company suffixes, months, and units that are written with a period.
 */
const ABBREVIATIONS = new Set([
  'e.g',
  'i.e',
  'eg',
  'ie',
  'cf',
  'vs',
  'viz',
  'al',
  'approx',
  'ca',
  'resp',
  'incl',
  'excl',
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'rev',
  'gen',
  'hon',
  'messrs',
  'sec',
  'secs',
  'art',
  'arts',
  'fig',
  'figs',
  'eq',
  'eqs',
  'ref',
  'refs',
  'vol',
  'vols',
  'ch',
  'chap',
  'para',
  'paras',
  'pp',
  'cl',
  'sch',
  'app',
  'appx',
  'annex',
  'tab',
  'nos',
  'pt',
  'pts',
  'subsec',
  'inc',
  'ltd',
  'co',
  'corp',
  'llc',
  'plc',
  'bros',
  'dept',
  'univ',
  'assn',
  'est',
  'govt',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'min',
  'max',
  'ft',
  'lb',
  'lbs',
  'oz',
  'sq',
  'cu',
  'hr',
  'hrs',
  'yr',
  'yrs',
  'mo',
  'wk',
  'wks',
  'a.m',
  'p.m',
  'u.s',
  'u.k',
  'e.u',
  'u.n',
  'ph.d',
]);
/** Abbreviations that only count as such before a number ("No. 5", "p. 12", "42 in. high"). */
const ABBREVIATIONS_BEFORE_NUMBER = new Set(['no', 'p', 'nos', 'pp']);

/** A list marker at the start of a line: bullets, "1.", "1)", "(a)", "a)", "iv.", "4.2.1". */
const LIST_MARKER_RE =
  /^[ \t]*(?:[-*\u2022\u00b7\u25aa\u25cf\u2023\u25e6\u2013\u2014\u2219]\s|\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,6})[.)]\s|\(\s*(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})\s*\)\s|\d{1,3}(?:\.\d{1,3})+\s)/;

/** Just an enumerator ("1.", "4.2.1", "(a)", "iv)") — never a sentence by itself. */
const ENUMERATOR_ONLY_RE = /^\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,6})[.)]?$/;

/** Function words that cannot end a line of a heading: a line ending with one continues below. */
const CONTINUING_WORDS = new Set([
  'the',
  'a',
  'an',
  'of',
  'and',
  'or',
  'to',
  'in',
  'for',
  'with',
  'by',
  'on',
  'at',
  'from',
  'as',
  'shall',
  'must',
  'will',
  'may',
  'should',
  'be',
  'is',
  'are',
  'that',
  'which',
  'not',
  'than',
  'this',
]);

const MAX_SENTENCE_CHARS = 800;

interface Piece {
  start: number;
  end: number;
}

/** Cuts text into blocks at hard line-level boundaries (blank lines, list items, headings, line ends after punctuation). */
function lineBlocks(text: string): Piece[] {
  const lines: Piece[] = [];
  let pos = 0;
  while (pos <= text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl;
    lines.push({ start: pos, end });
    if (nl === -1) break;
    pos = nl + 1;
  }
  const blocks: Piece[] = [];
  let blockStart = -1;
  let prev: Piece | null = null;
  for (const line of lines) {
    const content = text.slice(line.start, line.end);
    const blank = content.trim() === '';
    if (blank) {
      if (blockStart !== -1 && prev) blocks.push({ start: blockStart, end: prev.end });
      blockStart = -1;
      prev = null;
      continue;
    }
    if (blockStart === -1 || !prev) {
      blockStart = line.start;
      prev = line;
      continue;
    }
    if (isHardLineBreak(text.slice(prev.start, prev.end), content)) {
      blocks.push({ start: blockStart, end: prev.end });
      blockStart = line.start;
    }
    prev = line;
  }
  if (blockStart !== -1 && prev) blocks.push({ start: blockStart, end: prev.end });
  return blocks;
}

function isHardLineBreak(prevLine: string, nextLine: string): boolean {
  if (LIST_MARKER_RE.test(nextLine)) return true;
  const p = prevLine.trim();
  if (/[.!?:;\u2026]["'\u201d\u2019)\]]*$/.test(p)) return true;
  const next = nextLine.trim();
  // A short line without final punctuation followed by a capitalised line is a heading.
  if (p.length <= 50 && /^[\p{Lu}\d"'\u201c(]/u.test(next)) {
    const lastWord = (p.match(/([\p{L}]+)\W*$/u)?.[1] ?? '').toLowerCase();
    if (!CONTINUING_WORDS.has(lastWord) && !/,$/.test(p)) return true;
  }
  return false;
}

/** Finds sentence ends inside one block; returns pieces with untrimmed offsets. */
function splitBlock(text: string, block: Piece): Piece[] {
  const out: Piece[] = [];
  let sentStart = block.start;
  const re = /[.!?\u2026]+["'\u201d\u2019)\]]*(?=\s)/g;
  re.lastIndex = block.start;
  for (let m = re.exec(text); m && m.index < block.end; m = re.exec(text)) {
    const punctEnd = m.index + m[0].length;
    if (punctEnd >= block.end) break;
    // what follows, after whitespace
    const rest = text.slice(punctEnd, Math.min(block.end, punctEnd + 40));
    const nextChar = rest.replace(/^\s+/, '')[0] ?? '';
    if (!/[\p{Lu}\d"'\u201c\u2018([\u2022\-*]/u.test(nextChar)) continue;
    if (/^\.["'\u201d\u2019)\]]*$/.test(m[0])) {
      const before = text.slice(sentStart, m.index);
      const word = (before.match(/([\p{L}\p{N}.]+)$/u)?.[1] ?? '').toLowerCase();
      const followedByNumber = /^\d/.test(nextChar);
      if (ABBREVIATIONS_BEFORE_NUMBER.has(word)) {
        if (followedByNumber) continue;
      } else if (word === 'in') {
        if (/\d\s*in$/i.test(before)) continue; // "42 in. high"
      } else if (ABBREVIATIONS.has(word)) continue;
      // initialisms (U.S.A., e.g written without the list) and single capital initials (J. Smith)
      if (/^(?:\p{L}\.)+\p{L}$/u.test(word)) continue;
      if (isInitial(before)) continue;
    }
    const candidate = text.slice(sentStart, punctEnd).trim();
    if (ENUMERATOR_ONLY_RE.test(candidate)) continue; // "1." / "4.2." / "(a)" belong to what follows
    out.push({ start: sentStart, end: punctEnd });
    sentStart = punctEnd;
  }
  out.push({ start: sentStart, end: block.end });
  return out;
}

const CAP_SEPARATORS = [/;\s+/g, /\n/g, /,\s+/g];

/** Splits an over-long piece at "; ", then line breaks, then ", " so that quotes stay readable. */
function capLength(text: string, piece: Piece, level = 0): Piece[] {
  if (piece.end - piece.start <= MAX_SENTENCE_CHARS || level >= CAP_SEPARATORS.length) return [piece];
  const sep = new RegExp(CAP_SEPARATORS[level].source, 'g');
  const slice = text.slice(piece.start, piece.end);
  const parts: Piece[] = [];
  let s = 0;
  for (let m = sep.exec(slice); m; m = sep.exec(slice)) {
    const e = m.index + m[0].length;
    if (e - s >= 200 && slice.length - e >= 100) {
      parts.push({ start: piece.start + s, end: piece.start + e });
      s = e;
    }
  }
  parts.push({ start: piece.start + s, end: piece.end });
  return parts.flatMap((p) => capLength(text, p, level + 1));
}

/** Document labels that a capital letter may follow before a real sentence end ("Appendix A."). */
const LETTER_LABELS = new Set([
  'appendix',
  'annex',
  'schedule',
  'exhibit',
  'part',
  'section',
  'table',
  'figure',
  'class',
  'type',
  'grade',
  'zone',
  'level',
  'category',
  'option',
  'plan',
  'item',
  'group',
  'division',
  'phase',
  'article',
]);

/** True when the text before a period ends with a personal initial ("John F", "J"), not a label ("Appendix A"). */
function isInitial(before: string): boolean {
  const m = before.match(/(?:^|[\s(])(?:(\p{L}+)\s+)?\p{Lu}$/u);
  if (!m) return false;
  if (!m[1]) return true;
  return /^\p{Lu}/u.test(m[1]) && !LETTER_LABELS.has(m[1].toLowerCase());
}

/**
 * Splits text into sentences, each given with its offsets into `text` (`text.slice(start, end)` equals
 * the sentence's `text`; surrounding whitespace is trimmed off, inner line breaks are kept).
 *
 * Rule-based (in the spirit of Punkt/`sbd` rule sets, written here because those do not return offsets):
 * - hard breaks at blank lines, before list items (bullets, "1.", "a)", "(iv)", "4.2.1"), after a line
 *   ending with . ! ? : ;, and after short heading-like lines; other single line breaks are wrapped text;
 * - inside a block a sentence ends at . ! ? … (plus closing quotes/brackets) followed by whitespace and a
 *   capital, digit, quote or bracket — except after abbreviations (e.g., i.e., Sec., No. 5, et al., Inc.,
 *   initials), after a bare enumerator ("4.2.1."), and never inside decimals ("3.5");
 * - pieces longer than 800 characters are cut again at "; ", line breaks, then ", " — unless
 *   `options.whole` is set: the answerer quotes whole sentences only, however long.
 *
 * @returns sentences in order; [] for empty or whitespace-only text. Never throws.
 */
export function splitSentences(text: string, options: { whole?: boolean } = {}): SentenceSpan[] {
  const out: SentenceSpan[] = [];
  if (!text) return out;
  for (const block of lineBlocks(text)) {
    for (const raw of splitBlock(text, block)) {
      for (const piece of options.whole ? [raw] : capLength(text, raw)) {
        let { start, end } = piece;
        while (start < end && /\s/.test(text[start])) start++;
        while (end > start && /\s/.test(text[end - 1])) end--;
        if (end <= start) continue;
        const t = text.slice(start, end);
        if (!/[\p{L}\p{N}]/u.test(t)) continue;
        out.push({ text: t, start, end });
      }
    }
  }
  return out;
}
