import { maskNonNegating } from './polarity';

/** A window of times of day, in hours since midnight (0–24), that a text allows. */
export interface ClockWindow {
  lo: number;
  hi: number;
  text: string;
}

const TIME = String.raw`(?:(\d{1,2})(?::(\d{2}))?\s*(a\.?\s?m\.?|p\.?\s?m\.?)(?![a-z])|([01]?\d|2[0-3]):([0-5]\d)(?!\d)|(noon|midday|midnight))`;
const TIME_RE = new RegExp(TIME, 'gi');

/** Hours since midnight of the time matched by {@link TIME} (groups as in `TIME_RE`). */
function hoursOf(m: RegExpMatchArray | string[]): number | null {
  if (m[6]) return m[6].toLowerCase() === 'midnight' ? 0 : 12;
  if (m[4]) return Number(m[4]) + Number(m[5]) / 60;
  if (!m[1]) return null;
  let h = Number(m[1]) % 12;
  if (/^p/i.test(m[3])) h += 12;
  return h + (m[2] ? Number(m[2]) / 60 : 0);
}

const NEGATION_BEFORE = /\b(?:not|no|never|prohibited|forbidden|banned)\b[^.;]{0,40}$/i;

/**
 * The time-of-day window a sentence allows for what it regulates: "between 7 a.m. and 6 p.m." / "from 7:00
 * to 18:00" → [7, 18]; "before 7 a.m." / "until 7 a.m." / "by 7 a.m." → [0, 7]; "after 7 a.m." / "from 7
 * a.m." / "not before 7 a.m." → [7, 24]; "at 7 a.m." → [7, 7]. A negation or prohibition word shortly
 * before the window ("must not start before 7 a.m.", "is prohibited after 10 p.m.") turns it into its
 * complement on the same side. Times: "7 a.m.", "6:30 pm", "18:00", "noon", "midnight".
 *
 * @returns the first window found, or null when the sentence states no time of day.
 */
export function clockWindow(sentence: string): ClockWindow | null {
  const text = maskNonNegating(sentence);
  const range = new RegExp(String.raw`\b(?:between|from)\s+${TIME}\s*(?:and|to|until|till|-|\u2013)\s*${TIME}`, 'i').exec(text);
  if (range) {
    const a = hoursOf(range.slice(1, 7));
    const b = hoursOf(range.slice(7, 13));
    if (a != null && b != null) return negate(text.slice(0, range.index), { lo: Math.min(a, b), hi: Math.max(a, b), text: range[0] }, 'range');
  }
  TIME_RE.lastIndex = 0;
  for (const m of text.matchAll(TIME_RE)) {
    const h = hoursOf(m);
    if (h == null) continue;
    const before = text.slice(Math.max(0, (m.index ?? 0) - 60), m.index);
    const word = /\b(before|until|till|by|no\s+later\s+than|after|from|past|no\s+earlier\s+than|at)\s*$/i.exec(before);
    const kind = word?.[1].toLowerCase().replace(/\s+/g, ' ');
    const prefix = before.slice(0, word ? word.index : before.length);
    const span = `${word?.[0] ?? ''}${m[0]}`;
    if (kind === 'before' || kind === 'until' || kind === 'till' || kind === 'by' || kind === 'no later than')
      return negate(prefix, { lo: 0, hi: h, text: span }, 'upper');
    if (kind === 'after' || kind === 'from' || kind === 'past' || kind === 'no earlier than') return negate(prefix, { lo: h, hi: 24, text: span }, 'lower');
    return { lo: h, hi: h, text: span };
  }
  return null;
}

function negate(prefix: string, w: ClockWindow, side: 'upper' | 'lower' | 'range'): ClockWindow {
  if (!NEGATION_BEFORE.test(prefix)) return w;
  if (side === 'upper') return { lo: w.hi, hi: 24, text: w.text };
  if (side === 'lower') return { lo: 0, hi: w.lo, text: w.text };
  return w; // "not between A and B" has two sides; keep the stated range (no conflict claimed from it).
}

/**
 * Compares the time-of-day windows of a requirement and an evidence sentence: `consistent` when the
 * evidence's window lies inside the requirement's ("must not start before 7 a.m." vs "permitted only
 * between 7 a.m. and 6 p.m."), `conflict` when it allows times the requirement excludes ("from 6 a.m.").
 */
export function clockConflict(requirement: string, evidence: string): { conflict: boolean; consistent: boolean; detail: string } {
  const r = clockWindow(requirement);
  const e = r ? clockWindow(evidence) : null;
  if (!r || !e) return { conflict: false, consistent: false, detail: '' };
  const eps = 1e-6;
  const inside = e.lo >= r.lo - eps && e.hi <= r.hi + eps;
  return {
    consistent: inside,
    conflict: !inside,
    detail: inside ? '' : `the requirement allows "${r.text.trim()}" but the document states "${e.text.trim()}"`,
  };
}
