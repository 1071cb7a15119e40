import { splitSentences } from './sentences';

/** Modal verbs and phrases that mark a requirement clause. */
const MODAL_RE = /\b(?:shall|must|should|will|may|can|cannot|(?:is|are)\s+(?:required|obliged|obligated)\s+to|(?:has|have|need|needs)\s+to)\b/i;

/** A bullet or enumerator at the start of a line: "-", "•", "1.", "1)", "(a)", "a)", "iv.", "4.2.1". */
const ITEM_RE =
  /^[ \t]*(?:[-*\u2022\u00b7\u25aa\u25cf\u2023\u25e6\u2013\u2014\u2219]|\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,6})[.)]|\(\s*(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})\s*\)|\d{1,3}(?:\.\d{1,3})+)\s+/;

/** Words that start a noun phrase: coordinated phrases that each start with one are distinct objects. */
const DETERMINER_RE =
  /^(?:the|a|an|all|any|each|every|its|their|his|her|our|your|such|this|that|these|those|appropriate|adequate|suitable|written|one|two|three)\b/i;

/** Lead-ins that make a list a choice ("one of the following"): such lists are not split. */
const DISJUNCTIVE_RE = /\b(?:one|any|either|at\s+least\s+one)\s+of\s+the\s+following\b|\beither\b/i;

const clean = (s: string) =>
  s
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:and|or|but|also|then)\s+/i, '')
    .replace(/[\s;,:.]+$/g, '')
    .replace(/\s+(?:and|or)$/i, '')
    .trim();

/** Splits at `sep` where it is not inside parentheses, brackets or quotes. */
function splitTopLevel(text: string, sep: RegExp): { parts: string[]; seps: string[] } {
  const parts: string[] = [];
  const seps: string[] = [];
  let depth = 0;
  let last = 0;
  let inQuote = false;
  const re = new RegExp(sep.source, sep.flags.includes('g') ? sep.flags : sep.flags + 'g');
  const opens = new Map<number, number>();
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[') depth++;
    else if ((c === ')' || c === ']') && depth > 0) depth--;
    else if (c === '"' || c === '\u201c' || c === '\u201d') inQuote = c === '\u201c' ? true : c === '\u201d' ? false : !inQuote;
    opens.set(i, depth + (inQuote ? 1 : 0));
  }
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if ((opens.get(m.index) ?? 0) > 0) continue;
    parts.push(text.slice(last, m.index));
    seps.push(m[0]);
    last = m.index + m[0].length;
    if (m[0].length === 0) re.lastIndex++;
  }
  parts.push(text.slice(last));
  return { parts, seps };
}

/** The subject of a requirement clause: the words before its first modal ("The contractor"). */
function subjectOf(clause: string): string | null {
  const m = clause.match(MODAL_RE);
  if (!m || m.index === undefined || m.index === 0) return null;
  const subject = clause.slice(0, m.index).trim();
  return subject && subject.split(/\s+/).length <= 12 ? subject : null;
}

const startsWithModal = (s: string) => new RegExp(`^(?:also\\s+|not\\s+)?(?:${MODAL_RE.source.slice(2, -2)})\\b`, 'i').test(s.trim());

/** Gives a clause without a subject the subject of the first clause ("shall B" -> "The contractor shall B"). */
function withSubject(part: string, subject: string | null): string {
  const p = clean(part);
  if (!subject || !startsWithModal(p)) return p;
  return `${subject} ${p.replace(/^also\s+/i, '')}`;
}

/** Splits "S shall A and shall B" / "S shall A and T must B" at top-level "and" between clauses with modals. */
function splitClauses(text: string): string[] {
  const subject = subjectOf(text);
  const { parts } = splitTopLevel(text, /,?\s+and\s+(?=(?:also\s+|not\s+)?\S)/i);
  if (parts.length < 2) return [text];
  const out: string[] = [];
  let current = parts[0];
  for (let i = 1; i < parts.length; i++) {
    const right = parts[i];
    const rightIsClause = MODAL_RE.test(right) && (startsWithModal(right) || subjectOf(right) !== null);
    if (rightIsClause && MODAL_RE.test(current)) {
      out.push(current);
      current = startsWithModal(right) ? withSubject(right, subject) : right;
    } else current = `${current} and ${right}`;
  }
  out.push(current);
  return out;
}

/** Splits "S shall provide the A and the B" / "S must wear A, B, and C" into one object each. */
function splitObjects(text: string): string[] {
  const m = text.match(MODAL_RE);
  if (!m || m.index === undefined) return [text];
  const afterModal = text.slice(m.index + m[0].length);
  // verb group: optional "not"/adverb/"be" + one verb (+ particle), then the object phrase
  const vg = afterModal.match(/^(\s+(?:not\s+)?(?:\w+ly\s+)?(?:be\s+)?(?:\w+)(?:\s+(?:with|to|for|on|in|up|out|off))?)\s+/i);
  if (!vg) return [text];
  const head = text.slice(0, m.index + m[0].length) + vg[1];
  const object = afterModal.slice(vg[0].length);
  const { parts, seps } = splitTopLevel(object, /\s*,\s*(?:and\s+)?|\s+and\s+/i);
  if (parts.length < 2 || seps.some((s) => /\bor\b/i.test(s))) return [text];
  if (/\bor\b/i.test(object.replace(/\([^)]*\)/g, ''))) return [text];
  const items = parts.map(clean).filter(Boolean);
  if (items.length < 2) return [text];
  // Coordinated participles, adjectives or adverbs of a passive ("shall be selected carefully, protected and
  // controlled", "shall be established for the labeling, handling and security of data") are one obligation.
  if (/\bbe\s*$/i.test(vg[1].trim()) || /\s(?:be|been)\s/i.test(vg[1])) return [text];
  if (items.some((it) => /^\w+(?:ed|en|ly)$/i.test(it))) return [text];
  const commaList = items.length >= 3 && /and/i.test(seps[seps.length - 1]) && items.every((it) => it.split(/\s+/).length <= 4);
  const determined = items.every((it) => DETERMINER_RE.test(it));
  if (!commaList && !determined) return [text];
  if (items.some((it) => MODAL_RE.test(it))) return [text];
  return items.map((it) => `${head.trim()} ${it}`);
}

/** Splits a multi-line requirement with list items into "lead-in + item" parts. */
function splitList(text: string): string[] | null {
  const lines = text.split(/\r?\n/);
  const items: string[] = [];
  const lead: string[] = [];
  let sawItem = false;
  for (const line of lines) {
    if (!line.trim()) continue;
    const m = line.match(ITEM_RE);
    if (m) {
      sawItem = true;
      items.push(line.slice(m[0].length));
    } else if (sawItem) items[items.length - 1] += ` ${line.trim()}`;
    else lead.push(line.trim());
  }
  if (items.length === 0 || (items.length === 1 && lead.length === 0)) return null;
  // Only the lead-in's last sentence completes each item; earlier sentences of the lead-in are parts of their own.
  const leadSentences = splitSentences(lead.join(' ')).map((x) => x.text);
  const leadIn = leadSentences.pop() ?? '';
  if (DISJUNCTIVE_RE.test(leadIn) || items.slice(0, -1).some((it) => /\bor\s*$/i.test(it.trim()))) return [text];
  const prefix = leadIn
    .replace(/\s*(?:the\s+following|as\s+follows)\s*[:\-\u2013\u2014]?\s*$/i, '')
    .replace(/\s*[:\-\u2013\u2014]\s*$/, '')
    .trim();
  const out = [...leadSentences, ...items.map((it) => clean(prefix ? `${prefix} ${it.trim()}` : it))];
  return out.filter(Boolean);
}

/**
 * Sentences that say how a requirement may be met or what it covers rather than what must be true: notes,
 * examples, options ("where appropriate", "may choose", "can support") and scope remarks ("This inventory
 * includes …"). They are not checked as parts of their own.
 */
const NON_NORMATIVE_RE =
  /^(?:notes?\b|examples?\b|for\s+(?:example|instance)\b|e\.g\.|i\.e\.|where\s+(?:appropriate|possible|applicable|feasible|practical)\b|(?:this|these|such)\s+(?:\w+\s+){0,3}(?:includes?|covers?|means?|refers?)\b|additionally,\s+it\s+includes\b)|\b(?:may\s+choose|can\s+support|could\s+include|example\s+(?:topics|implementations?)\s+include|best\s+practice\s+implementation\s+includes)\b/i;

/** The sentences of a requirement that state an obligation (see {@link NON_NORMATIVE_RE}); the whole text when none or one. */
function normativeSentences(text: string): string[] {
  const sentences = splitSentences(text).map((x) => x.text);
  if (sentences.length <= 1) return [text];
  const kept = sentences.filter((x) => !NON_NORMATIVE_RE.test(x.trim()));
  return kept.length ? kept : [text];
}

/**
 * Splits a compound requirement into atomic sub-requirements, each readable on its own.
 *
 * Rules, applied in order: (1) list items (bullets, "1.", "a)", "(iv)") each become a part prefixed
 * with the lead-in's last sentence ("The contractor shall:" + "- A" → "The contractor shall A"), unless the
 * lead-in offers a choice ("one of the following"); without a list, each sentence that states an obligation
 * is a part (notes, examples, options such as "where appropriate" and scope remarks such as "This inventory
 * includes …" are not parts of their own); (2) top-level ";" separates parts; (3) "and" joining two
 * clauses that each carry a modal verb (shall, must, should, will, may, can, is required to, has to)
 * separates them, and a clause without its own subject gets the first clause's subject ("The contractor
 * shall A and shall B" → "The contractor shall A", "The contractor shall B"); (4) distinct objects of one
 * verb are split when each starts with a determiner ("provide the plan and the schedule") or form a list
 * of three or more ("wear hard hats, safety glasses, and gloves"), but not the participles, adjectives or
 * adverbs of a passive ("shall be selected carefully, protected and controlled"). "or" never splits (a choice is one
 * requirement); text in parentheses or quotes is never split. A single requirement comes back whole
 * (trimmed).
 *
 * @returns at least one part, none empty.
 * @throws RangeError when `requirement` is empty or only whitespace (callers validate input first).
 */
export function breakDownRequirement(requirement: string): string[] {
  const text = (requirement ?? '').trim();
  if (!text) throw new RangeError('requirement is empty');
  const listed = splitList(text) ?? normativeSentences(text);
  const out: string[] = [];
  for (const item of listed) {
    const { parts } = splitTopLevel(item, /;\s*/);
    const subject = subjectOf(parts[0]);
    for (const part of parts) {
      const p = withSubject(part, subject);
      if (!p) continue;
      for (const clause of splitClauses(p)) for (const atom of splitObjects(clean(clause))) if (clean(atom)) out.push(clean(atom));
    }
  }
  if (out.length <= 1) return [text];
  return [...new Set(out.map((p) => p.charAt(0).toUpperCase() + p.slice(1)))];
}
