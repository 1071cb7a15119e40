/**
 * Reading a requirement as what must be true (issue 27, "Requirement language").
 *
 * Control frameworks and specifications word an obligation with framing that no implementing document
 * repeats: "Implement policies and procedures to …", "Ensure that …", "The organization shall …",
 * "Procedures for …", "Is there a process …?". A policy satisfies "Implement electronic procedures that
 * terminate an electronic session after a predetermined time of inactivity" by saying "Information systems
 * automatically log users off the systems after 15 minutes of inactivity": the framing is not content the
 * evidence must repeat. {@link readRequirement} separates that framing from the core statement; the
 * requirement's specifics (numbers, frequencies, durations, roles, scope) stay in the core.
 *
 * Also normalised (NIST SP 800-53 / FedRAMP notation, Markdown emphasis): "[Assignment:
 * organization-defined frequency]" → "frequency", "[Selection (one or more): a; b]" → "a or b", "**x**" → "x".
 */

/** A requirement split into its framing and the statement the evidence must satisfy. */
export interface RequirementReading {
  /** The requirement as given. */
  text: string;
  /** What must be true, without framing; the whole (normalised) text when no framing was found. */
  core: string;
  /** The framing taken off the front ("Implement policies and procedures to"), or null. */
  framing: string | null;
  /** True for a yes/no question ("Is there a written agreement …?", PCI DSS SAQ style). */
  question: boolean;
}

/** Fewest words the core keeps; a shorter remainder means the "framing" was the content. */
const MIN_CORE_WORDS = 3;

const ACTORS = String.raw`(?:the\s+)?(?:organi[sz]ation|company|enterprise|entity|covered\s+entity|service\s+provider|provider|contractor|employer|information\s+system|system)`;
const MODAL = String.raw`(?:shall|must|should|will|is\s+required\s+to|are\s+required\s+to|needs?\s+to|has\s+to|have\s+to)`;
const VERB = String.raw`(?:implement|establish|develop|define|document|maintain|create|adopt|have|put\s+in\s+place|institute|enforce|apply|use|employ|plan|review|update|disseminate)`;
const VERBS = String.raw`${VERB}s?(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+)${VERB}s?)*`;
const ARTIFACT = String.raw`(?:policies|policy|procedures|procedure|processes|process|plans?|programs?|programmes?|mechanisms?|controls?|measures?|methods?|standards?|guidelines?)`;
const ARTIFACTS = String.raw`(?:(?:a|an|the|formal|documented|written|appropriate|electronic|technical|administrative|physical|reasonable|security|operational)\s+)*${ARTIFACT}(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+|\s+or\s+)(?:(?:formal|documented|written|appropriate|electronic|technical|security|operational)\s+)*${ARTIFACT})*`;
const LINK = String.raw`(?:to|for|that|which|in\s+order\s+to|designed\s+to|in\s+support\s+of)`;

/**
 * Framings taken off the front, tried in order and repeatedly ("The organization shall ensure that …").
 * Each is anchored at the start and followed by the core. Sources: the wording of HIPAA §164.3xx
 * ("Implement policies and procedures to …"), ISO/IEC 27001 ("The organization shall …"), CIS Controls
 * ("Establish and maintain a process …"), NIST SP 800-53 ("The organization: a. Develops …").
 */
const FRAMINGS: RegExp[] = [
  // "The organization shall", "The information system must", "The organization:"
  new RegExp(String.raw`^${ACTORS}\s*(?:${MODAL}\b\s*:?|:)\s*`, 'i'),
  // "Implement policies and procedures to", "Establish and maintain a process for", "Develop and document a plan that"
  new RegExp(String.raw`^${VERBS}\s+${ARTIFACTS}\s+${LINK}\s+`, 'i'),
  // "Policies and procedures shall be established and maintained to", "A policy … shall be adopted for"
  new RegExp(String.raw`^${ARTIFACTS}\s+${MODAL}\s+be\s+(?:\w+ed)(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+)\w+ed)*\s+${LINK}\s+`, 'i'),
  // "Procedures for creating …", "Policies and procedures to …"
  new RegExp(String.raw`^${ARTIFACTS}\s+${LINK}\s+`, 'i'),
  // a leading enumerator left by the above ("The organization: a. Develops …")
  /^\(?(?:[a-z]|\d{1,2}|[ivx]{1,4})[.)]\s+/i,
  // "Ensure that", "Ensures", "Make sure that"
  /^(?:ensure|ensures|ensuring|make\s+sure|verify|confirm)\s+(?:that\s+)?/i,
  // "Is there", "Are there", "Is a", "Are" (yes/no questions of self-assessment questionnaires)
  /^(?:is|are)\s+there\s+/i,
  /^(?:is|are|does|do|has|have)\s+(?=(?:a|an|the|all|each|every|any|\w+s)\b)/i,
];

/** NIST 800-53 / FedRAMP parameters and Markdown emphasis, written plainly. */
function normalise(text: string): string {
  return text
    .replace(/\[\s*Assignment\s*:\s*(?:organi[sz]ation-defined\s+)?([^\]]*)\]/gi, '$1')
    .replace(/\[\s*Selection\s*(?:\([^)]*\))?\s*:\s*([^\]]*)\]/gi, (_, list: string) =>
      list
        .split(/\s*;\s*/)
        .filter(Boolean)
        .join(' or '),
    )
    .replace(/\*\*|__/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
}

const wordCount = (s: string) => (s.match(/[\p{L}\p{N}]+/gu) ?? []).length;

/**
 * Reads a requirement: takes the framing off the front (repeatedly) and keeps the core statement.
 *
 * @example readRequirement('Implement policies and procedures to prevent, detect, contain and correct security violations.')
 *   // → core "prevent, detect, contain and correct security violations.", framing "Implement policies and procedures to"
 * @returns the reading; `core` is the normalised whole text when what would remain has fewer than
 *   {@link MIN_CORE_WORDS} words (then the "framing" was the content). Never throws.
 */
export function readRequirement(text: string): RequirementReading {
  const whole = normalise(text ?? '');
  const question = /\?\s*$/.test(whole);
  let core = whole;
  const taken: string[] = [];
  for (let round = 0; round < 4; round++) {
    let matched = false;
    for (const re of FRAMINGS) {
      const m = core.match(re);
      if (!m || m[0].length === 0) continue;
      const rest = core.slice(m[0].length);
      if (wordCount(rest) < MIN_CORE_WORDS) continue;
      taken.push(m[0].trim());
      core = rest;
      matched = true;
      break;
    }
    if (!matched) break;
  }
  if (question) core = core.replace(/\s*\?\s*$/, '.');
  core = core.charAt(0).toUpperCase() + core.slice(1);
  return { text, core, framing: taken.length ? taken.join(' ') : null, question };
}

/** The core statement of a requirement ({@link readRequirement}`.core`): what retrieval and the judge look for. */
export function requirementCore(text: string): string {
  return readRequirement(text).core;
}

/** Number words a frequency may use ("every two weeks"). */
const COUNT = String.raw`(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|other)`;
const PERIOD = String.raw`(?:hours?|days?|nights?|weeks?|months?|quarters?|years?|shifts?|calendar (?:days?|months?|years?))`;
/**
 * A stated frequency: an adverb (daily … annually), "every [N] <period>", "once / twice / N times a <period>",
 * "each / per <period>", "per annum". Vague ones ("regularly", "periodically", "organization-defined frequency")
 * are not specific.
 */
const SPECIFIC_FREQUENCY = new RegExp(
  String.raw`\b(?:hourly|daily|nightly|weekly|fortnightly|bi-?weekly|monthly|bi-?monthly|quarterly|semi-?annually|annually|yearly|biennially|per annum|` +
    String.raw`every\s+(?:${COUNT}\s+)?${PERIOD}|(?:once|twice|${COUNT}\s+times)\s+(?:a|an|per|each|every)\s+${PERIOD}|(?:each|per)\s+${PERIOD})\b`,
  'gi',
);

/**
 * The specific frequencies a text states ("at least annually" → ["annually"], "every 90 days" → ["every 90 days"]),
 * lower-cased, in order; [] when it states none or only a vague one ("regularly", "periodically").
 * Issue 27: a requirement's specifics (numbers, frequencies, durations) stay what the evidence must meet.
 */
export function specificFrequencies(text: string): string[] {
  return [...text.matchAll(SPECIFIC_FREQUENCY)].map((m) => m[0].toLowerCase().replace(/\s+/g, ' '));
}

/** A title longer than this (characters) is prose, not a title: it is not joined. */
const TITLE_MAX_CHARS = 200;

/**
 * The requirement as the check reads it: its title joined in front of its text (`title: text`) when the
 * requirement's `metadata` has a string under the key `title` (any case: a CSV column "Title" sent by the CLI
 * counts), non-empty and at most 200 characters once whitespace is collapsed and a trailing ":" "." or ";"
 * dropped; the text unchanged otherwise, or when it already starts with the title (case-insensitive).
 *
 * Why (issue 27, measured with `npm run eval:controls`, docs/check.md "A requirement's title"): frameworks give
 * each requirement a short descriptive title ("Automatic logoff", "Information backup") in the words a
 * procedure's title and headings use; read with it, the ISO/IEC 27001/27002 requirements of the `fit` split found
 * a mapped procedure first for 35.1 % instead of 29.6 %, their pass rate 90.3 → 90.7 %.
 *
 * @param text the requirement text as given (1–5,000 characters, service-api.md).
 * @param metadata the requirement's metadata object as given, or null / undefined.
 * @returns the text to break down, search with and judge; the stored and returned `text` stays as given.
 */
export function requirementWithTitle(text: string, metadata: Record<string, unknown> | null | undefined): string {
  return joinTitle(text, requirementTitle(metadata));
}

/**
 * `title: text`, or `text` unchanged when `title` is null or empty or `text` already starts with it (case-insensitive,
 * so joining twice changes nothing). `title` as {@link requirementTitle} gives it.
 */
export function joinTitle(text: string, title: string | null | undefined): string {
  if (!title || text.trimStart().toLowerCase().startsWith(title.toLowerCase())) return text;
  return `${title}: ${text}`;
}

/**
 * The title {@link requirementWithTitle} joins: `metadata.title` (any case of the key) with whitespace collapsed and a
 * trailing ":" "." or ";" dropped; null when absent, not a string, empty or longer than 200 characters.
 */
export function requirementTitle(metadata: Record<string, unknown> | null | undefined): string | null {
  if (!metadata) return null;
  const key = Object.keys(metadata).find((k) => k.toLowerCase() === 'title');
  const value = key === undefined ? undefined : metadata[key];
  if (typeof value !== 'string') return null;
  const title = value
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/\s*[:.;]+$/, '');
  return title && title.length <= TITLE_MAX_CHARS ? title : null;
}

/**
 * `requirement` without the `title: ` that {@link requirementWithTitle} put in front of it (a sub-requirement of a
 * titled requirement may or may not start with it); `requirement` unchanged otherwise. The judge's word-for-word
 * rule reads this too (judgeRequirement's `title`): a sentence that states it states the requirement.
 */
export function withoutTitle(requirement: string, title: string | null | undefined): string {
  if (!title) return requirement;
  const lead = requirement.trimStart();
  const prefix = `${title}: `;
  return lead.length > prefix.length && lead.slice(0, prefix.length).toLowerCase() === prefix.toLowerCase() ? lead.slice(prefix.length) : requirement;
}
