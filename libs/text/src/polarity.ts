import { isStopword, stemToken, tokenize } from './analyze';
import { AFFIRMATIVES, ANTONYM_PAIRS, DIRECTION_GROUPS, EXCEPTION_MARKERS, NEGATORS, NON_NEGATING_PHRASES, PROHIBITIVES, RESTRICTIVES } from './lexicon';

/** A clause of a sentence with its polarity (+1 affirmative, −1 negated or prohibited). */
export interface Clause {
  start: number;
  end: number;
  text: string;
  /** Opened by an exception marker ("except", "unless", "other than"). */
  exception: boolean;
  sign: 1 | -1;
  /** Negation or prohibition words that set the sign, for explanations. */
  cues: string[];
}

/** Replaces phrases that contain "no"/"not" without negating ("no more than") by spaces of equal length. */
export function maskNonNegating(text: string): string {
  let masked = text;
  for (const re of NON_NEGATING_PHRASES) masked = masked.replace(new RegExp(re.source, re.flags), (m) => ' '.repeat(m.length));
  return masked;
}

function ownSign(text: string): { sign: 1 | -1; cues: string[] } {
  const cues: string[] = [];
  for (const t of tokenize(maskNonNegating(text))) {
    if (NEGATORS.has(t.norm) || PROHIBITIVES.has(t.norm) || t.norm.endsWith("n't")) cues.push(t.norm);
  }
  return { sign: cues.length % 2 === 0 ? 1 : -1, cues };
}

/**
 * Splits a sentence into clauses at ";", ":", ", but", ", however", "whereas", and before exception
 * markers, and gives each its polarity: −1 when it carries an odd number of negations or prohibition
 * words ("not", "never", "no", "without", "prohibited", "forbidden", …; see `lexicon.ts`), after masking
 * phrases like "no more than" or "not limited to". An exception clause without its own negation takes
 * the opposite polarity of the clause it qualifies ("shall not disclose … except to employees": the
 * exception is affirmative).
 */
export function clausesOf(text: string): Clause[] {
  const cuts = new Set<number>([0, text.length]);
  for (const m of text.matchAll(/[;:]\s+|,\s+(?:but|however|whereas|although|though)\b|\s(?:whereas|however|although)\b/gi)) cuts.add(m.index ?? 0);
  const exceptionStarts = new Set<number>();
  for (const m of text.matchAll(new RegExp(EXCEPTION_MARKERS.source, 'gi'))) {
    const at = m.index ?? 0;
    cuts.add(at);
    exceptionStarts.add(at);
  }
  const sorted = [...cuts].sort((a, b) => a - b);
  const out: Clause[] = [];
  let lastMainSign: 1 | -1 = 1;
  for (let i = 0; i + 1 < sorted.length; i++) {
    const start = sorted[i];
    const end = sorted[i + 1];
    const t = text.slice(start, end);
    if (!/[\p{L}\p{N}]/u.test(t)) continue;
    const exception = exceptionStarts.has(start);
    const own = ownSign(t);
    let sign = own.sign;
    if (exception && own.cues.length === 0) sign = lastMainSign === 1 ? -1 : 1;
    if (!exception) lastMainSign = sign;
    out.push({ start, end, text: t, exception, sign, cues: own.cues });
  }
  if (out.length === 0) out.push({ start: 0, end: text.length, text, exception: false, sign: 1, cues: [] });
  return out;
}

/** Polarity of a requirement: the parity of negations over its non-exception clauses. */
export function requirementSign(text: string): { sign: 1 | -1; cues: string[] } {
  const main = clausesOf(text).filter((c) => !c.exception);
  const cues = main.flatMap((c) => c.cues);
  return { sign: cues.length % 2 === 0 ? 1 : -1, cues };
}

/**
 * True when the text restricts an action to a purpose or group: "only", "solely", "limited to", or a
 * negation with an exception ("shall not use … other than for …"). Two restrictions agree even when
 * one is worded with a negation and the other without.
 */
export function isRestriction(text: string): boolean {
  if (RESTRICTIVES.test(text)) return true;
  const cls = clausesOf(text);
  return cls.some((c) => c.exception) && cls.some((c) => !c.exception && c.sign === -1);
}

const COMPARATOR_MASK =
  /\b(?:at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|higher\s+than|lower\s+than|longer\s+than|shorter\s+than|later\s+than|earlier\s+than)\b/gi;

const ANTONYM_STEMS: [string, string, string, string][] = ANTONYM_PAIRS.map(([a, b]) => [stemToken(a), stemToken(b), a, b]);

const DIRECTION_STEMS: [Set<string>, Set<string>][] = DIRECTION_GROUPS.map(([a, b]) => [new Set(a.map(stemToken)), new Set(b.map(stemToken))]);

function stemsOf(text: string): Set<string> {
  const masked = maskNonNegating(text).replace(COMPARATOR_MASK, (m) => ' '.repeat(m.length));
  return new Set(tokenize(masked).map((t) => stemToken(t.norm)));
}

/**
 * Antonym pairs (see `ANTONYM_PAIRS`) where the requirement uses one word and the evidence the other
 * without the first ("closed" vs "open", "before" vs "after", "minimum" vs "maximum"). Each is one
 * polarity flip. Comparison phrases ("more than") are left to the quantity check.
 */
export function antonymFlips(requirement: string, evidence: string): { required: string; found: string }[] {
  const r = stemsOf(requirement);
  const e = stemsOf(evidence);
  const out: { required: string; found: string }[] = [];
  const seen = new Set<string>();
  for (const [sa, sb, a, b] of ANTONYM_STEMS) {
    for (const [x, y, wx, wy] of [
      [sa, sb, a, b],
      [sb, sa, b, a],
    ] as const) {
      if (r.has(x) && !r.has(y) && e.has(y) && !e.has(x) && !seen.has(`${x}|${y}`)) {
        seen.add(`${x}|${y}`);
        out.push({ required: wx, found: wy });
      }
    }
  }
  for (const [up, down] of DIRECTION_STEMS) {
    const rUp = [...up].find((x) => r.has(x));
    const rDown = [...down].find((x) => r.has(x));
    const eUp = [...up].find((x) => e.has(x));
    const eDown = [...down].find((x) => e.has(x));
    if (rUp && !rDown && eDown && !eUp) out.push({ required: rUp, found: eDown });
    else if (rDown && !rUp && eUp && !eDown) out.push({ required: rDown, found: eUp });
  }
  return out;
}

/** Tokens before / after a matched term within which a negation or prohibition word applies to it. */
export const NEGATION_WINDOW = { before: 5, after: 3 };

/**
 * Polarity of an evidence sentence as it bears on the requirement: each occurrence of a requirement term
 * votes with the parity of the negation and prohibition words within {@link NEGATION_WINDOW} tokens of it
 * (inside the same clause; an exception clause without its own negation takes the opposite of its main
 * clause), weighted by the term's IDF. A negation far from every requirement term does not count.
 *
 * @returns sign of the vote (+1 when no requirement term occurs), the cue words that decided it, and
 *   `explicit`: true when the sign is negative or an affirmative word ({@link AFFIRMATIVES}) stands near a term.
 */
export function scopedSign(sentence: string, weights: Map<string, number>): { sign: 1 | -1; cues: string[]; explicit: boolean } {
  const masked = maskNonNegating(sentence);
  const clauses = clausesOf(sentence);
  const toks = tokenize(masked).map((t) => {
    const clauseIndex = Math.max(
      0,
      clauses.findIndex((c) => t.start >= c.start && t.start < c.end),
    );
    const cue = NEGATORS.has(t.norm) || PROHIBITIVES.has(t.norm) || t.norm.endsWith("n't");
    return { ...t, stem: stemToken(t.norm), clauseIndex, cue };
  });
  // A requirement term found only in an exception clause makes the requirement about the exception:
  // "shall not disclose … except to employees" permits disclosure to employees.
  const mainStems = new Set(toks.filter((t) => !clauses[t.clauseIndex]?.exception).map((t) => t.stem));
  const exceptionHit = toks.find((t) => clauses[t.clauseIndex]?.exception && weights.get(t.stem) && !isStopword(t.norm) && !mainStems.has(t.stem));
  if (exceptionHit) {
    const clause = clauses[exceptionHit.clauseIndex];
    return { sign: clause.sign, cues: clause.cues.length ? clause.cues : [clause.text.trim().split(/\s+/)[0].toLowerCase()], explicit: true };
  }
  let vote = 0;
  let explicit = false;
  const decisive = new Map<1 | -1, Set<string>>([
    [1, new Set()],
    [-1, new Set()],
  ]);
  toks.forEach((t, i) => {
    const w = weights.get(t.stem);
    if (!w || isStopword(t.norm)) return;
    const clause = clauses[t.clauseIndex];
    const cues: string[] = [];
    for (let j = Math.max(0, i - NEGATION_WINDOW.before); j <= Math.min(toks.length - 1, i + NEGATION_WINDOW.after); j++) {
      if (j === i || toks[j].clauseIndex !== t.clauseIndex) continue;
      if (toks[j].cue) cues.push(toks[j].norm);
      else if (AFFIRMATIVES.has(toks[j].norm)) explicit = true;
    }
    let sign: 1 | -1 = cues.length % 2 === 0 ? 1 : -1;
    if (clause?.exception && cues.length === 0) sign = clause.sign;
    vote += sign * w;
    cues.forEach((c) => decisive.get(sign)!.add(c));
  });
  const sign: 1 | -1 = vote < 0 ? -1 : 1;
  return { sign, cues: [...decisive.get(sign)!], explicit: sign === -1 || explicit };
}
