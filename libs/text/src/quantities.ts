import { isStopword, stemToken } from './analyze';
import { COMPARATORS_AFTER, COMPARATORS_BEFORE } from './lexicon';

/** A number with its unit and the range of values the text allows for it. */
export interface Quantity {
  /** Dimension key: 'length', 'time', 'mass', 'percent', 'currency:usd', …, or 'noun:<stem>' for counts. */
  dim: string;
  /** Allowed values in the dimension's base unit (inches, hours, kilograms, percent, …). */
  lo: number;
  hi: number;
  loOpen: boolean;
  hiOpen: boolean;
  /** Surface text of the number with its unit and comparator, for explanations. */
  text: string;
  start: number;
  end: number;
}

/** Units with a conversion to a base unit per dimension (length: inch, time: hour, mass: kg). */
const UNITS: Record<string, [string, number]> = {};
const addUnits = (dim: string, factor: number, names: string[]) => names.forEach((n) => (UNITS[n] = [dim, factor]));
addUnits('length', 1, ['in', 'inch', 'inches', '"', '\u2033']);
addUnits('length', 12, ['ft', 'foot', 'feet', "'", '\u2032']);
addUnits('length', 36, ['yd', 'yard', 'yards']);
addUnits('length', 63360, ['mi', 'mile', 'miles']);
addUnits('length', 0.0393701, ['mm', 'millimeter', 'millimeters', 'millimetre', 'millimetres']);
addUnits('length', 0.393701, ['cm', 'centimeter', 'centimeters', 'centimetre', 'centimetres']);
addUnits('length', 39.3701, ['m', 'meter', 'meters', 'metre', 'metres']);
addUnits('length', 39370.1, ['km', 'kilometer', 'kilometers', 'kilometre', 'kilometres']);
addUnits('time', 1 / 3600, ['s', 'sec', 'secs', 'second', 'seconds']);
addUnits('time', 1 / 60, ['min', 'mins', 'minute', 'minutes']);
addUnits('time', 1, ['h', 'hr', 'hrs', 'hour', 'hours']);
addUnits('time', 24, ['day', 'days']);
addUnits('time', 168, ['wk', 'wks', 'week', 'weeks']);
addUnits('time', 730.5, ['mo', 'month', 'months']);
addUnits('time', 8766, ['yr', 'yrs', 'year', 'years']);
addUnits('mass', 1e-6, ['mg', 'milligram', 'milligrams']);
addUnits('mass', 1e-3, ['g', 'gram', 'grams']);
addUnits('mass', 1, ['kg', 'kilogram', 'kilograms', 'kilo', 'kilos']);
addUnits('mass', 0.453592, ['lb', 'lbs', 'pound', 'pounds']);
addUnits('mass', 0.0283495, ['oz', 'ounce', 'ounces']);
addUnits('mass', 1000, ['t', 'ton', 'tons', 'tonne', 'tonnes']);
addUnits('percent', 1, ['%', 'percent', 'per cent', 'pct']);
addUnits('temperature-c', 1, ['\u00b0c', 'celsius', 'degrees celsius', 'deg c']);
addUnits('temperature-f', 1, ['\u00b0f', 'fahrenheit', 'degrees fahrenheit', 'deg f']);
addUnits('voltage', 1, ['v', 'volt', 'volts']);
addUnits('voltage', 1000, ['kv', 'kilovolt', 'kilovolts']);
addUnits('power', 1, ['w', 'watt', 'watts']);
addUnits('power', 1000, ['kw', 'kilowatt', 'kilowatts']);
addUnits('pressure', 1, ['psi']);
addUnits('pressure', 0.145038, ['kpa']);
addUnits('pressure', 14.5038, ['bar']);
addUnits('sound', 1, ['db', 'dba', 'db(a)', 'decibel', 'decibels']);
addUnits('current', 1, ['a', 'amp', 'amps', 'ampere', 'amperes']);

const CURRENCY_SYMBOLS: Record<string, string> = { $: 'usd', '\u20ac': 'eur', '\u00a3': 'gbp', '\u00a5': 'jpy' };
const CURRENCY_WORDS: Record<string, string> = {
  usd: 'usd',
  dollar: 'usd',
  dollars: 'usd',
  eur: 'eur',
  euro: 'eur',
  euros: 'eur',
  gbp: 'gbp',
};

const SMALL_NUMBERS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
  hundred: 100,
  thousand: 1000,
  million: 1e6,
  single: 1,
  double: 2,
  half: 0.5,
};

/** Words before a number that make it a reference, not a quantity ("Section 4.2", "No. 5", "page 3"). */
const REFERENCE_WORDS = new Set([
  'section',
  'sec',
  'article',
  'art',
  'clause',
  'paragraph',
  'para',
  'page',
  'pages',
  'p',
  'pp',
  'item',
  'no',
  'number',
  'figure',
  'fig',
  'table',
  'appendix',
  'annex',
  'schedule',
  'exhibit',
  'part',
  'chapter',
  'rule',
  'step',
  'version',
  'v',
  'phase',
  'level',
  'class',
  'type',
  'grade',
  'category',
  'zone',
  'form',
  'iso',
  'en',
  'ansi',
  'osha',
  'nfpa',
  'cfr',
  'usc',
  'code',
  'standard',
  'regulation',
  'reg',
  'act',
  'law',
  'directive',
  'order',
  'bs',
  'din',
  'astm',
  'iec',
  'ieee',
  'id',
  'ref',
  'model',
  'tier',
  'stage',
  'round',
]);

/** Words between a number and its noun that are not the noun ("30 calendar days", "two full years"). */
const UNIT_MODIFIERS = new Set([
  'calendar',
  'business',
  'working',
  'consecutive',
  'full',
  'additional',
  'further',
  'more',
  'successive',
  'clear',
  'whole',
  'complete',
  'separate',
  'different',
  'individual',
  'total',
  'of',
  'per',
  'the',
  'such',
]);

const NUMBER_WORD = Object.keys(SMALL_NUMBERS).join('|');
/**
 * A number: digits (thousands separators, decimals) or number words ("twenty-four", "one hundred"),
 * optionally followed by the same number in parentheses ("thirty (30)"), optionally preceded by a currency sign.
 */
const NUMBER_RE = new RegExp(
  String.raw`([$\u20ac\u00a3\u00a5])?\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|(?:${NUMBER_WORD})\b(?:[\s-](?:${NUMBER_WORD})\b)*)(?:\s*\(\s*[$\u20ac\u00a3]?\s?\d[\d,.]*\s*\))?`,
  'gi',
);

function parseNumber(raw: string): number | null {
  const clean = raw.replace(/,/g, '').toLowerCase();
  if (/^\d/.test(clean)) {
    const v = Number(clean);
    return Number.isFinite(v) ? v : null;
  }
  let total = 0;
  let current = 0;
  for (const w of clean.split(/[\s-]+/)) {
    const v = SMALL_NUMBERS[w];
    if (v === undefined) return null;
    if (v === 100) current = (current || 1) * 100;
    else if (v >= 1000) {
      total += (current || 1) * v;
      current = 0;
    } else current += v;
  }
  return total + current;
}

/** Reads the unit right after a number: a known unit, a currency word, or the counted noun. */
function readUnit(after: string): { dim: string; factor: number; length: number } | null {
  const m = after.match(/^(\s*-?\s*)(°\s?[cf]|%|"|\u2033|'(?![a-z])|\u2032|[a-z]+(?:\s+(?:cent|celsius|fahrenheit|[cf]\b))?(?:\(a\))?)/i);
  if (!m) return null;
  const unit = m[2].toLowerCase().replace(/\s+/g, ' ').replace(/^°\s?/, '\u00b0');
  // "in" is inches only when no word follows ("42 in." / "42 in,"), not in "1 in 5".
  if (unit === 'in' && /^\s+[\p{L}\d]/u.test(after.slice(m[0].length))) return null;
  if (UNITS[unit]) return { dim: UNITS[unit][0], factor: UNITS[unit][1], length: m[0].length };
  const firstWord = unit.split(' ')[0];
  if (UNITS[firstWord]) return { dim: UNITS[firstWord][0], factor: UNITS[firstWord][1], length: m[1].length + firstWord.length };
  if (CURRENCY_WORDS[firstWord]) return { dim: `currency:${CURRENCY_WORDS[firstWord]}`, factor: 1, length: m[1].length + firstWord.length };
  // Counted noun, skipping a few modifiers ("30 calendar days" -> days, "two (2) copies" -> copies).
  const words = [...after.matchAll(/[a-z]+/gi)].slice(0, 4);
  for (const w of words) {
    const lw = w[0].toLowerCase();
    if (UNIT_MODIFIERS.has(lw)) continue;
    if (UNITS[lw]) return { dim: UNITS[lw][0], factor: UNITS[lw][1], length: (w.index ?? 0) + lw.length };
    if (lw.length < 3 || isStopword(lw)) return null;
    return { dim: `noun:${stemToken(lw)}`, factor: 1, length: (w.index ?? 0) + lw.length };
  }
  return null;
}

/**
 * Finds quantities in text: a number (digits or words) with its unit and a comparison bound.
 *
 * Bounds come from the words around the number ({@link COMPARATORS_BEFORE}: "at least", "no more than",
 * "within", "minimum of", "up to", …; {@link COMPARATORS_AFTER}: "or more", "or less", …) and from ranges
 * ("between 3 and 5 m", "3-5 m", "3 to 5 m"). A bare number means exactly that value. Units of length,
 * time, mass, percent, temperature, voltage, power, pressure, sound and currency are converted to one base
 * unit per dimension; other numbers are compared only with numbers counting the same noun ("3 copies").
 * Numbers that are references (section numbers, years alone, identifiers like "ISO 9001") are skipped.
 */
export function extractQuantities(text: string): Quantity[] {
  const out: Quantity[] = [];
  NUMBER_RE.lastIndex = 0;
  for (let m = NUMBER_RE.exec(text); m; m = NUMBER_RE.exec(text)) {
    const start = m.index + (m[0].length - m[0].trimStart().length);
    const numEnd = m.index + m[0].length;
    // Digits glued to letters or dots (ids, versions, "1926.502(b)") are not quantities.
    const prevChar = text[start - 1] ?? ' ';
    const nextChar = text[numEnd] ?? ' ';
    if (/[\p{L}\d._/]/u.test(prevChar) && !m[1]) continue;
    if (/[\d_/]/.test(nextChar) || (nextChar === '.' && /\d/.test(text[numEnd + 1] ?? ''))) continue;
    if (nextChar === '(') continue;
    let value = parseNumber(m[2]);
    if (value === null) continue;
    let end = numEnd;
    const scale = /^\d/.test(m[2]) ? text.slice(end).match(/^\s+(thousand|million|billion)\b/i) : null;
    if (scale) {
      value *= { thousand: 1e3, million: 1e6, billion: 1e9 }[scale[1].toLowerCase() as 'thousand'];
      end += scale[0].length;
    }
    const before = text.slice(Math.max(0, start - 40), start);
    const prevWord = (before.match(/([\p{L}]+)\.?\s*$/u)?.[1] ?? '').toLowerCase();
    if (REFERENCE_WORDS.has(prevWord) || /[A-Z]{2,}\s*$/.test(before)) continue;
    let dim: string;
    let factor = 1;
    let unitLen = 0;
    if (m[1]) {
      dim = `currency:${CURRENCY_SYMBOLS[m[1]]}`;
    } else {
      const unit = readUnit(text.slice(end, end + 60));
      if (!unit) continue;
      dim = unit.dim;
      factor = unit.factor;
      unitLen = unit.length;
    }
    // Word numbers need a real unit or noun and must not be "one of", "no one" etc.
    if (/^[a-z]/i.test(m[2]) && (value === 1 || (dim.startsWith('noun:') && /^(?:of|another|other)$/.test(dim.slice(5))))) continue;
    if (!m[1] && dim.startsWith('noun:') && value >= 1900 && value <= 2100 && Number.isInteger(value)) continue;
    let lo = value * factor;
    let hi = value * factor;
    let loOpen = false;
    let hiOpen = false;
    let qStart = start;
    const qEnd = end + unitLen;
    // Ranges: "between 3 and 5 m", "3 to 5 m", "3-5 m": the first number takes the second's unit.
    const rangeMatch = text.slice(Math.max(0, start - 30), start).match(/(?:between\s+)?(\d+(?:\.\d+)?)\s*(?:-|\u2013|to|and)\s*$/i);
    if (rangeMatch && !out.some((q) => q.end > start - rangeMatch[0].length)) {
      const first = Number(rangeMatch[1]);
      if (Number.isFinite(first) && first < value) {
        lo = first * factor;
        qStart = start - rangeMatch[0].length;
      }
    } else {
      const cmpBefore = COMPARATORS_BEFORE.find(([re]) => re.test(before));
      const cmpAfter = COMPARATORS_AFTER.find(([re]) => re.test(text.slice(qEnd, qEnd + 30)));
      const cmp = cmpBefore?.[1] ?? cmpAfter?.[1];
      if (cmpBefore) qStart = Math.max(0, start - (before.length - before.search(cmpBefore[0])));
      if (cmp === 'ge' || cmp === 'gt') {
        hi = Infinity;
        loOpen = cmp === 'gt';
      } else if (cmp === 'le' || cmp === 'lt') {
        lo = dim === 'temperature-c' || dim === 'temperature-f' ? -Infinity : 0;
        hiOpen = cmp === 'lt';
      }
    }
    out.push({ dim, lo, hi, loOpen, hiOpen, text: text.slice(qStart, qEnd).trim(), start: qStart, end: qEnd });
  }
  return out;
}

const EPS = 1e-6;
const eq = (a: number, b: number) => Math.abs(a - b) <= EPS * Math.max(1, Math.abs(a), Math.abs(b));

/** True when every value allowed by `e` is allowed by `r` (interval inclusion, with open ends). */
function within(e: Quantity, r: Quantity): boolean {
  const loOk = e.lo > r.lo + EPS || (eq(e.lo, r.lo) && (!r.loOpen || e.loOpen)) || r.lo === -Infinity;
  const hiOk = e.hi < r.hi - EPS || (eq(e.hi, r.hi) && (!r.hiOpen || e.hiOpen)) || r.hi === Infinity;
  return loOk && hiOk;
}

/** True when some value is allowed by both. */
function overlaps(a: Quantity, b: Quantity): boolean {
  const lo = Math.max(a.lo, b.lo);
  const hi = Math.min(a.hi, b.hi);
  if (lo < hi - EPS) return true;
  if (!eq(lo, hi)) return false;
  const loOpen = (eq(a.lo, lo) && a.loOpen) || (eq(b.lo, lo) && b.loOpen);
  const hiOpen = (eq(a.hi, hi) && a.hiOpen) || (eq(b.hi, hi) && b.hiOpen);
  return !loOpen && !hiOpen;
}

/** Outcome of checking a requirement's quantities against an evidence sentence's quantities. */
export interface QuantityCheck {
  /** Requirement quantity that no evidence quantity of the same dimension satisfies, with what the evidence says. */
  conflict: { required: Quantity; found: Quantity } | null;
  /** Requirement quantities satisfied by some evidence quantity. */
  satisfied: number;
}

/**
 * Compares quantities: a requirement bound ("at least 42 in") is met by evidence whose allowed range lies
 * inside it ("42 in", "45 in", "at least 48 in"); an exact requirement ("42 in") is met by evidence whose
 * range contains it. A requirement quantity with evidence of the same dimension but none meeting it is a
 * conflict ("at least 42 in" vs "39 in"; "within 24 hours" vs "within 72 hours").
 */
export function compareQuantities(required: Quantity[], found: Quantity[]): QuantityCheck {
  let satisfied = 0;
  let conflict: QuantityCheck['conflict'] = null;
  for (const r of required) {
    const same = found.filter((f) => f.dim === r.dim);
    if (same.length === 0) continue;
    const exact = r.lo === r.hi;
    const ok = same.some((f) => (exact ? overlaps(f, r) : within(f, r)));
    if (ok) satisfied++;
    // Bounds that differ only at their end point ("under 75 dB" vs "must not exceed 75 dB") are no
    // explicit conflict: neither satisfied nor contradicted.
    else if (!conflict && !same.some((f) => within({ ...f, loOpen: true, hiOpen: true }, { ...r, loOpen: false, hiOpen: false })))
      conflict = { required: r, found: same[0] };
  }
  return { conflict, satisfied };
}
