/**
 * Evidence of the right size and kind (issue 27): a concrete statement can satisfy an abstract obligation,
 * often across a short passage or a list rather than one sentence. An {@link EvidenceUnit} is a verbatim span
 * of one chunk: one sentence, or two or three consecutive sentences (at most {@link MAX_UNIT_CHARS}), and a
 * list item knows the lead-in it completes ("Northwind policy requires that" + "(h) Authenticated sessions
 * must time out after a defined period of inactivity."). Headings, tables of contents, reference or mapping
 * lists ("164.308(a)(5)(ii)(D) Password Management") and bare links are never evidence on their own
 * ({@link isNonEvidence}); the section heading a unit stands under is context for the model that reads it.
 */
import { ALIGN_WEIGHTS, idfWeights, matchCredit, sentenceUnits, type SentenceUnit } from './align';
import { analyze } from './analyze';
import type { PassageInput } from './types';

/** Longest span a multi-sentence unit may cover (characters; about 90 word pieces). */
export const MAX_UNIT_CHARS = 450;
/** Most consecutive sentences in one unit. */
export const MAX_UNIT_SENTENCES = 3;

/** A verbatim span of one passage offered as evidence, with the context a reader needs to understand it. */
export interface EvidenceUnit {
  passage: PassageInput;
  passageIndex: number;
  /** Offsets into `passage.text`: `passage.text.slice(start, end) === text`. */
  start: number;
  end: number;
  text: string;
  /** The sentences the span is made of (each analysed: terms, bigrams), in order. */
  sentences: SentenceUnit[];
  /** The lead-in a list item completes ("… requires that:"), when it is not inside the span; else null. */
  leadIn: string | null;
}

/** A reference to a clause of a standard or regulation: "164.308(a)(5)(ii)(D)", "A.9.4.3", "AC-2(1)", "§ 1910.28", "PR.AC-1", "CIS 5.2". */
const REFERENCE = String.raw`(?:§+\s*\d[\w.()-]*|\d{2,3}\.\d{2,4}(?:\([a-z0-9]{1,4}\))+|[A-Z]{1,3}\.\d{1,2}(?:\.\d{1,2}){0,3}|[A-Z]{2,3}(?:\.[A-Z]{2,3})?-\d{1,2}(?:\s*\(\d{1,2}\))?|(?:ISO|IEC|NIST|CIS|PCI|SOC|HIPAA|CMMC|CSA|SP|DSS)\b[\s/:-]*[\w.:()-]*\d[\w.()-]*)`;
const REFERENCE_RE = new RegExp(REFERENCE, 'g');
const STARTS_WITH_REFERENCE_RE = new RegExp(String.raw`^[\s\-*\u2022(]*${REFERENCE}`);
/** A finite verb or modal that makes a line a statement rather than a title. */
const STATEMENT_RE =
  /\b(?:is|are|was|were|be|been|being|has|have|had|must|shall|should|will|would|may|can|cannot|could|do|does|did|requires?|ensures?|includes?|provides?|maintains?|reviews?|performs?|uses?|applies|apply)\b/i;
/** A dot leader with a page number: a line of a table of contents. */
const TOC_RE = /(?:\.\s?){4,}\s*\d+\s*$|\s{3,}\d+\s*$/;
const URL_RE = /\b(?:https?:\/\/|www\.)\S+/gi;

const words = (s: string) => s.match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * True for a sentence that is never evidence on its own: a table-of-contents line, a reference or
 * mapping line (mostly clause references, or one reference with a short title and no statement), a
 * heading-like line (at most 8 words, no sentence punctuation, no verb), a bare link, or a Markdown
 * admonition marker ("!!! check …"). Such lines name an obligation; they do not say how it is met.
 */
export function isNonEvidence(sentence: string): boolean {
  const s = sentence.trim();
  if (!s) return true;
  if (/^!!!/.test(s)) return true;
  if (TOC_RE.test(s)) return true;
  const w = words(s);
  const withoutLinks = s.replace(URL_RE, ' ');
  if (words(withoutLinks).length === 0) return true;
  const refs = s.match(REFERENCE_RE) ?? [];
  const refWords = refs.reduce((n, r) => n + words(r).length, 0);
  if (refs.length >= 2 && refWords >= 0.4 * w.length) return true;
  if (STARTS_WITH_REFERENCE_RE.test(s) && w.length - refWords <= 8 && !STATEMENT_RE.test(s.replace(REFERENCE_RE, ' '))) return true;
  if (w.length <= 8 && !/[.!?;:]["'\u201d)]*$/.test(s) && !STATEMENT_RE.test(s)) return true;
  return false;
}

/** A line that introduces a list: ends with ":" or with "that", "following", "include(s)", "as follows". */
const LEAD_IN_RE = /(?::|\b(?:that|following|includes?|including|as\s+follows|to))\s*$/i;
/** A list item: starts with a bullet or an enumerator. */
const ITEM_RE =
  /^[ \t]*(?:[-*\u2022\u00b7\u25aa\u25cf\u2023\u25e6\u2013\u2014\u2219]\s|\(?(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})[.)]\s|\(\s*(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]{1,6})\s*\)\s)/;

/**
 * The evidence units of the passages: every sentence that is not {@link isNonEvidence}, and every run of
 * two or three consecutive such sentences of one passage within {@link MAX_UNIT_CHARS}. A sentence (or run)
 * that follows a lead-in line of a list keeps that lead-in as `leadIn` unless the run contains it.
 *
 * @returns units in passage order, then by start offset, single sentences before the runs that start with
 *   them. Never throws.
 */
export function evidenceUnits(passages: PassageInput[], units: SentenceUnit[] = sentenceUnits(passages)): EvidenceUnit[] {
  const out: EvidenceUnit[] = [];
  const byPassage = new Map<number, SentenceUnit[]>();
  for (const u of units) {
    const list = byPassage.get(u.passageIndex) ?? [];
    list.push(u);
    byPassage.set(u.passageIndex, list);
  }
  for (const [passageIndex, all] of [...byPassage.entries()].sort((a, b) => a[0] - b[0])) {
    const passage = passages[passageIndex];
    // The lead-in each sentence completes: the nearest earlier lead-in line with only list items between.
    const leadOf: (string | null)[] = [];
    let lead: string | null = null;
    for (const u of all) {
      // an item: a bullet or enumerator, or (after a lead-in) a fragment that starts in lower case or ends with ";"/","
      const isItem = ITEM_RE.test(u.text) || (lead !== null && (/^\p{Ll}/u.test(u.text.trim()) || /[;,](?:\s*(?:and|or))?\s*$/.test(u.text)));
      if (!isItem) lead = null;
      leadOf.push(isItem ? lead : null);
      if (LEAD_IN_RE.test(u.text) && !isNonEvidence(u.text)) lead = u.text;
    }
    const kept = all.map((u, i) => ({ u, i, lead: leadOf[i] })).filter((x) => !isNonEvidence(x.u.text));
    for (let a = 0; a < kept.length; a++) {
      for (let n = 1; n <= MAX_UNIT_SENTENCES && a + n <= kept.length; n++) {
        const run = kept.slice(a, a + n);
        // consecutive in the passage (no non-evidence line skipped inside a run)
        if (run[run.length - 1].i - run[0].i !== n - 1) break;
        const start = run[0].u.start;
        const end = run[run.length - 1].u.end;
        if (n > 1 && end - start > MAX_UNIT_CHARS) break;
        const leadIn = run[0].lead && !run.some((r) => r.u.text === run[0].lead) ? run[0].lead : null;
        out.push({ passage, passageIndex, start, end, text: passage.text.slice(start, end), sentences: run.map((r) => r.u), leadIn });
      }
    }
  }
  return out;
}

/** Last heading of a section path ("Access > Policy Statements > Access Control Policy" → "Access Control Policy"). */
export function sectionTitle(section: string | null | undefined): string | null {
  if (!section) return null;
  const last = section.split(' > ').pop()!.trim();
  return last || null;
}

/**
 * What the requirement-satisfaction model reads as the evidence side of a pair: the section's title, the
 * lead-in of a list item, then the unit's text ("Password Management: Northwind policy requires that (c) All
 * credentials … must meet the length … requirements"). Whitespace collapsed.
 */
export function unitModelText(unit: Pick<EvidenceUnit, 'text' | 'leadIn'> & { passage: Pick<PassageInput, 'section'> }): string {
  const title = sectionTitle(unit.passage.section);
  const parts = [title ? `${title}:` : '', unit.leadIn ?? '', unit.text];
  return parts.filter(Boolean).join(' ').replace(/\s+/g, ' ').trim();
}

/** A unit ranked as evidence for one requirement by the cheap first stage (words and meaning). */
export interface RankedUnit {
  unit: EvidenceUnit;
  /** IDF-weighted share of the requirement's content terms in the unit (its sentences' terms together). */
  coverage: number;
  /** Lexical alignment in [0, 1]: {@link ALIGN_WEIGHTS} over coverage, passage coverage, bigrams, retrieval rank. */
  lexical: number;
  /** Highest cosine similarity of the requirement to one of the unit's embedded sentences (0 when none is embedded). */
  similarity: number;
  /** Share of the requirement's terms in the section title the unit stands under. */
  headingCoverage: number;
  /** The ranking score (see {@link rankUnits}). */
  score: number;
}

/** Weight of the section title's coverage in a unit's score: a section whose heading names the obligation is where to look first. */
export const HEADING_WEIGHT = 0.1;
/** Score taken off per sentence beyond the first, so a run wins over its best sentence only when it adds matching content. */
export const EXTRA_SENTENCE_PENALTY = 0.02;

/**
 * The first stage of evidence selection: every {@link evidenceUnits} unit of the passages scored against the
 * requirement by words (IDF-weighted coverage of its terms by the unit's sentences together, bigrams, the
 * passage's coverage and retrieval rank: the weights of `alignSentences`) and, with sentence embeddings, by
 * meaning (the best cosine of its sentences): score = 0.4 × lexical + 0.6 × similarity (lexical alone without
 * embeddings, as in `rankEvidence`) + {@link HEADING_WEIGHT} × heading coverage − {@link EXTRA_SENTENCE_PENALTY}
 * per extra sentence.
 *
 * @param requirement the text to match (the judge passes the requirement's core statement).
 * @param semantic sentence vectors keyed by `unitKey` (see `semanticCandidates`); optional.
 * @returns units best first; [] when the requirement has no content terms or there are no units. Never throws.
 */
export function rankUnits(
  requirement: string,
  passages: PassageInput[],
  semantic?: { query: number[]; sentences: Map<string, number[]> },
  units = sentenceUnits(passages),
): RankedUnit[] {
  const qAll = analyze(requirement);
  const q = [...new Set(qAll)];
  const evidence = evidenceUnits(passages, units);
  if (q.length === 0 || evidence.length === 0) return [];
  const idf = idfWeights(q, units);
  const total = q.reduce((s, t) => s + (idf.get(t) ?? 0), 0) || 1;
  const qBigrams: string[] = [];
  for (let i = 1; i < qAll.length; i++) qBigrams.push(`${qAll[i - 1]} ${qAll[i]}`);
  const scores = passages.map((p) => (Number.isFinite(p.score) ? p.score : 0));
  const maxScore = Math.max(...scores);
  const minScore = Math.min(...scores);
  const retrieval = (i: number) => (maxScore === minScore ? 1 : minScore >= 0 ? scores[i] / maxScore : (scores[i] - minScore) / (maxScore - minScore));
  const passageTerms = new Map<number, Set<string>>();
  for (const u of units) {
    const set = passageTerms.get(u.passageIndex) ?? new Set<string>();
    for (const t of u.terms) set.add(t);
    passageTerms.set(u.passageIndex, set);
  }
  const covered = (terms: Set<string>) => q.reduce((s, t) => s + matchCredit(t, terms) * (idf.get(t) ?? 0), 0) / total;
  const useSemantic = !!semantic && semantic.query.length > 0 && semantic.sentences.size > 0;
  const headingCache = new Map<number, number>();
  const passageCache = new Map<number, number>();
  const out: RankedUnit[] = evidence.map((unit) => {
    const terms = new Set<string>();
    const bigrams = new Set<string>();
    for (const s of unit.sentences) {
      for (const t of s.terms) terms.add(t);
      for (const b of s.bigrams) bigrams.add(b);
    }
    const coverage = covered(terms);
    let passageCoverage = passageCache.get(unit.passageIndex);
    if (passageCoverage === undefined) {
      passageCoverage = covered(passageTerms.get(unit.passageIndex) ?? new Set());
      passageCache.set(unit.passageIndex, passageCoverage);
    }
    const bigram = qBigrams.length ? qBigrams.filter((b) => bigrams.has(b)).length / qBigrams.length : coverage;
    const w = ALIGN_WEIGHTS;
    const lexical = w.coverage * coverage + w.passageCoverage * passageCoverage + w.bigram * bigram + w.retrieval * retrieval(unit.passageIndex);
    let similarity = 0;
    if (useSemantic) {
      for (const s of unit.sentences) {
        const v = semantic.sentences.get(`${s.passageIndex}:${s.start}:${s.end}`);
        if (v) similarity = Math.max(similarity, dot(semantic.query, v));
      }
    }
    let headingCoverage = headingCache.get(unit.passageIndex);
    if (headingCoverage === undefined) {
      const title = sectionTitle(unit.passage.section);
      headingCoverage = title ? covered(new Set(analyze(title))) : 0;
      headingCache.set(unit.passageIndex, headingCoverage);
    }
    const base = useSemantic ? LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * similarity : lexical;
    const score = base + HEADING_WEIGHT * headingCoverage - EXTRA_SENTENCE_PENALTY * (unit.sentences.length - 1);
    return { unit, coverage, lexical, similarity, headingCoverage, score };
  });
  return out.sort((a, b) => b.score - a.score || a.unit.passageIndex - b.unit.passageIndex || a.unit.start - b.unit.start || a.unit.end - b.unit.end);
}

/** Share of the lexical score in a unit's score when embeddings are present (the rest is cosine), as `LEXICAL_SELECTION_WEIGHT`. */
const LEXICAL_WEIGHT = 0.4;

/**
 * Candidates for the second stage (the requirement-satisfaction model): the best-ranked unit of each of the `k`
 * passages retrieval ranks highest (passages without an evidence unit are skipped), so the model compares
 * passages of several chunks. Retrieval's order of whole chunks (hybrid search over the chunk with its headings)
 * chose the implementing procedure more often than the first stage's order of units did: on the `fit`
 * frameworks of eval:controls, the procedure the model read best among the first 4 chunks was a mapped one for
 * 28.9 % of the requirements, against 27.2 % among the chunks of the 4 best units (docs/check.md).
 * @param ranked output of {@link rankUnits}; @returns at most `k` units, in retrieval order.
 */
export function unitCandidates(ranked: RankedUnit[], k: number): RankedUnit[] {
  const best = new Map<number, RankedUnit>();
  for (const r of ranked) if (!best.has(r.unit.passageIndex)) best.set(r.unit.passageIndex, r);
  const byRetrieval = [...best.values()].sort(
    (a, b) =>
      (Number.isFinite(b.unit.passage.score) ? b.unit.passage.score : 0) - (Number.isFinite(a.unit.passage.score) ? a.unit.passage.score : 0) ||
      a.unit.passageIndex - b.unit.passageIndex,
  );
  return byRetrieval.slice(0, k);
}

const dot = (a: number[], b: number[]): number => {
  let s = 0;
  for (let i = 0; i < a.length && i < b.length; i++) s += a[i] * b[i];
  return s;
};
