/**
 * General English lexicons of compliance language used by the heuristic judge. They are hand-written
 * from ordinary usage in regulations, contracts and procedures (no dataset-specific words).
 */

/** Tokens that negate the clause they stand in (each one flips the clause polarity). */
export const NEGATORS = new Set([
  'not', 'no', 'never', 'none', 'nor', 'neither', 'without', 'cannot', 'nothing', 'nobody', 'nowhere',
  "can't", "won't", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "shouldn't",
  "mustn't", "shan't", "hasn't", "haven't", "hadn't", "couldn't", "wouldn't", "mayn't", "needn't",
  'lack', 'lacks', 'lacked', 'lacking', 'refrain', 'refrains',
]);

/**
 * Words that state a permission or a strong obligation explicitly. A negated requirement ("must not X")
 * is contradicted only by a sentence that affirms X with one of them near X ("X is permitted", "may X",
 * "X is required"): a sentence that merely mentions X without a negation is not evidence against it.
 */
export const AFFIRMATIVES = new Set([
  'may', 'can', 'allow', 'allows', 'allowed', 'permit', 'permits', 'permitted', 'permissible', 'entitled',
  'free', 'authorized', 'authorised', 'must', 'required', 'requires', 'mandatory', 'always', 'obligated',
]);

/** Words that state a prohibition by themselves ("X is prohibited" = "X must not happen"): one flip. */
export const PROHIBITIVES = new Set([
  'prohibit', 'prohibits', 'prohibited', 'prohibiting', 'prohibition', 'forbid', 'forbids', 'forbidden',
  'forbidding', 'ban', 'bans', 'banned', 'disallow', 'disallows', 'disallowed', 'barred', 'preclude',
  'precludes', 'precluded', 'impermissible', 'unlawful', 'illegal',
]);

/**
 * Phrases that contain a negation word without negating the clause: comparison bounds ("no more than",
 * "not less than"), "not limited to", "whether or not", "not only", "No. 5". They are masked before
 * polarity is counted (the bounds are read by the quantity parser instead).
 */
export const NON_NEGATING_PHRASES: RegExp[] = [
  /\b(?:no|not)\s+(?:more|less|fewer|greater|later|earlier|sooner|longer|shorter|higher|lower|smaller|larger)\s+than\b/gi,
  /\bnot\s+to\s+exceed\b/gi,
  /\bnot\s+exceeding\b/gi,
  /\bnot\s+limited\s+to\b/gi,
  /\bwithout\s+(?:\w+\s+){0,2}limitation\b/gi,
  /\bwithout\s+limiting\b/gi,
  /\bwhether\s+or\s+not\b/gi,
  /\bnot\s+only\b/gi,
  /\bif\s+not\b/gi,
  /\bno\.\s*\d/gi,
];

/** Words opening an exception: what follows has the opposite polarity of the main clause. */
export const EXCEPTION_MARKERS = /\b(?:except(?:\s+(?:for|as|that|where|when|to))?|unless|other\s+than|excluding|save\s+(?:as|that|for)|apart\s+from|but\s+not)\b/gi;

/** Words that restrict a permission ("only", "solely"): "may use only for P" = "shall not use except for P". */
export const RESTRICTIVES = /\b(?:only|solely|exclusively|strictly|limited\s+to|restricted\s+to|sole\s+purpose)\b/i;

/**
 * Pairs of words with opposite meaning in compliance texts (matched on Porter2 stems of both sides).
 * A requirement using one word and an evidence sentence using the other (and not the first) read as
 * a polarity flip.
 */
export const ANTONYM_PAIRS: [string, string][] = [
  ['open', 'closed'], ['open', 'close'], ['opened', 'closed'], ['before', 'after'], ['prior', 'after'],
  ['minimum', 'maximum'], ['min', 'max'], ['inside', 'outside'], ['internal', 'external'], ['interior', 'exterior'],
  ['indoor', 'outdoor'], ['indoors', 'outdoors'], ['higher', 'lower'], ['high', 'low'], ['more', 'less'], ['more', 'fewer'],
  ['greater', 'smaller'], ['greater', 'less'], ['larger', 'smaller'], ['above', 'below'],
  ['upper', 'lower'], ['locked', 'unlocked'], ['lock', 'unlock'], ['include', 'exclude'], ['included', 'excluded'],
  ['including', 'excluding'], ['accept', 'reject'], ['accepted', 'rejected'], ['approve', 'reject'],
  ['approved', 'rejected'], ['grant', 'deny'], ['granted', 'denied'], ['enable', 'disable'], ['enabled', 'disabled'],
  ['entry', 'exit'], ['entrance', 'exit'], ['wet', 'dry'], ['hot', 'cold'], ['daytime', 'nighttime'],
  ['temporary', 'permanent'], ['mandatory', 'optional'], ['required', 'optional'],
  ['compulsory', 'voluntary'], ['mandatory', 'voluntary'], ['public', 'private'], ['written', 'oral'],
  ['written', 'verbal'], ['presence', 'absence'], ['positive', 'negative'],
  ['safe', 'unsafe'], ['safe', 'dangerous'], ['secure', 'insecure'], ['full', 'empty'], ['full', 'partial'],
  ['connected', 'disconnected'], ['attached', 'detached'], ['continuous', 'intermittent'],
  ['horizontal', 'vertical'], ['first', 'last'], ['earliest', 'latest'], ['early', 'late'], ['earlier', 'later'],
  ['long', 'short'], ['longer', 'shorter'], ['wide', 'narrow'], ['wider', 'narrower'], ['gain', 'loss'],
  ['benefit', 'harm'], ['success', 'failure'], ['pass', 'fail'], ['passed', 'failed'], ['same', 'different'],
  ['identical', 'different'], ['consistent', 'inconsistent'], ['compliant', 'noncompliant'], ['legal', 'illegal'],
  ['valid', 'invalid'], ['authorized', 'unauthorized'], ['authorised', 'unauthorised'], ['qualified', 'unqualified'],
  ['certified', 'uncertified'], ['able', 'unable'], ['possible', 'impossible'], ['likely', 'unlikely'],
  ['necessary', 'unnecessary'], ['sufficient', 'insufficient'], ['adequate', 'inadequate'],
  ['appropriate', 'inappropriate'], ['acceptable', 'unacceptable'], ['available', 'unavailable'],
  ['exclusive', 'nonexclusive'], ['revocable', 'irrevocable'], ['transferable', 'nontransferable'],
  ['limited', 'unlimited'], ['direct', 'indirect'], ['effective', 'ineffective'], ['active', 'inactive'],
  ['activate', 'deactivate'], ['activated', 'deactivated'], ['encrypted', 'unencrypted'], ['signed', 'unsigned'],
  ['supervised', 'unsupervised'], ['attended', 'unattended'], ['guarded', 'unguarded'], ['protected', 'unprotected'],
  ['covered', 'uncovered'], ['restricted', 'unrestricted'], ['known', 'unknown'],
  ['upstream', 'downstream'], ['inbound', 'outbound'],
];

/**
 * Direction of change: a requirement saying a quantity goes one way ("reduce", "lower", "slow") and a
 * sentence saying it goes the other ("increase", "elevated", "accelerate") read as one polarity flip,
 * like an antonym pair. Matched on Porter2 stems.
 */
export const DIRECTION_GROUPS: [string[], string[]][] = [
  [
    ['increase', 'increased', 'increases', 'increasing', 'raise', 'raised', 'rise', 'rises', 'rising', 'elevate',
      'elevated', 'elevation', 'enhance', 'enhanced', 'boost', 'boosted', 'accelerate', 'accelerated', 'grow', 'growth',
      'expand', 'expanded', 'exceed', 'exceeds', 'exceeded', 'promote', 'promotes', 'promoted', 'improve', 'improved',
      'gain', 'extend', 'extended', 'prolong', 'prolonged', 'strengthen', 'strengthened', 'upregulate', 'upregulated'],
    ['decrease', 'decreased', 'decreases', 'decreasing', 'reduce', 'reduced', 'reduces', 'reduction', 'lower', 'lowered',
      'lowers', 'decline', 'declined', 'diminish', 'diminished', 'drop', 'dropped', 'fall', 'fell', 'lessen', 'lessened',
      'shrink', 'inhibit', 'inhibits', 'inhibited', 'suppress', 'suppressed', 'suppresses', 'slow', 'slows', 'slowed',
      'impair', 'impaired', 'attenuate', 'attenuated', 'weaken', 'weakened', 'shorten', 'shortened', 'worsen',
      'worsened', 'downregulate', 'downregulated', 'cut', 'limit'],
  ],
];

/**
 * Quantity comparators before a number, mapped to the bound they set. Order matters: the negated forms
 * ("no more than") are tried before the plain ones ("more than").
 */
export const COMPARATORS_BEFORE: [RegExp, 'ge' | 'gt' | 'le' | 'lt'][] = [
  [/\b(?:(?:not|never|n't)\s+(?:be\s+)?(?:less\s+than|fewer\s+than|shorter\s+than|lower\s+than|smaller\s+than|below|under)|at\s+least|no\s+less\s+than|not\s+less\s+than|no\s+fewer\s+than|not\s+fewer\s+than|a\s+minimum\s+of|minimum(?:\s+of)?|min\.?|no\s+earlier\s+than|not\s+earlier\s+than|no\s+shorter\s+than|not\s+shorter\s+than|no\s+lower\s+than|not\s+lower\s+than|no\s+smaller\s+than|not\s+below)\s*$/i, 'ge'],
  [/\b(?:(?:not|never|n't)\s+(?:be\s+)?(?:exceed(?:s|ing)?|more\s+than|greater\s+than|longer\s+than|higher\s+than|larger\s+than|over|above|beyond|in\s+excess\s+of)|never\s+exceeds?|at\s+most|no\s+more\s+than|not\s+more\s+than|no\s+greater\s+than|not\s+greater\s+than|not\s+to\s+exceed|not\s+exceeding|a\s+maximum\s+of|maximum(?:\s+of)?|max\.?|up\s+to|within|no\s+later\s+than|not\s+later\s+than|no\s+longer\s+than|not\s+longer\s+than|no\s+higher\s+than|not\s+higher\s+than|no\s+larger\s+than|not\s+above|as\s+much\s+as|as\s+many\s+as)\s*$/i, 'le'],
  [/\b(?:more\s+than|greater\s+than|over|above|exceeds?|exceeding|in\s+excess\s+of|longer\s+than|higher\s+than|larger\s+than|later\s+than|beyond)\s*$/i, 'gt'],
  [/\b(?:less\s+than|fewer\s+than|under|below|shorter\s+than|lower\s+than|smaller\s+than|earlier\s+than|before)\s*$/i, 'lt'],
];

/** Quantity comparators after a number and its unit ("42 inches or more"). */
export const COMPARATORS_AFTER: [RegExp, 'ge' | 'le'][] = [
  [/^\s*(?:or\s+(?:more|greater|higher|longer|larger|above|over)|and\s+(?:above|over|up|more)|minimum|min\.?|at\s+(?:a\s+)?minimum)\b/i, 'ge'],
  [/^\s*(?:or\s+(?:less|fewer|lower|shorter|smaller|below|under|earlier|sooner)|and\s+(?:below|under|less)|maximum|max\.?|at\s+(?:the\s+)?(?:most|maximum))\b/i, 'le'],
];
