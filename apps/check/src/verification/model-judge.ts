import { completeStep, NO_USAGE, type ChatModel } from '@kb/models';
import { breakDownRequirement, makeQuote, readRequirement, resolveEvidence, type Judgement, type PassageInput } from '@kb/text';
import { z } from 'zod';
import type { CallUsage, EmbeddedJudge, RequirementJudge } from './judges';

/** Confidence ceiling when the model's quote cannot be traced to the passages (below 0.7 = insufficient). */
export const UNSUPPORTED_CONFIDENCE_CAP = 0.6;
/**
 * A model's COMPLIANT/CONTRADICTS verdict is capped at {@link UNSUPPORTED_CONFIDENCE_CAP} when the
 * calibrated embedded judge, reading only the quoted evidence, finds it more likely than this that the
 * quote does not address the requirement at all (P(NOT_FOUND) on the evidence alone).
 */
export const EVIDENCE_SUPPORT_MIN = 0.5;
/** Longest passage text sent to the model (characters); chunks are normally far shorter. */
const MAX_PASSAGE_CHARS = 6000;
/** Most sub-requirements a model breakdown may return. */
export const MAX_PARTS = 20;

const JUDGE_SYSTEM = [
  'You are a careful compliance officer. You decide whether project documentation satisfies one requirement,',
  'using ONLY the numbered passages given.',
  'Read the requirement as what must be true. Framing such as "implement policies and procedures to", "ensure that",',
  '"the organization shall" or "procedures for" is not content the documents must repeat: a concrete statement satisfies',
  'an abstract obligation ("sessions are logged off after 15 minutes of inactivity" meets "terminate sessions after a',
  'period of inactivity"). The requirement\'s specifics (numbers, frequencies, durations, roles, scope) must still be met.',
  'Headings, tables of contents and reference or mapping lists (lines of clause numbers) are never evidence on their own.',
  'Verdicts:',
  '- COMPLIANT: a passage states that the requirement is met.',
  '- CONTRADICTS: a passage states something incompatible with the requirement (a prohibition where it asks for a permission, a different number, the opposite state, …).',
  '- NOT_FOUND: no passage settles it either way.',
  'For COMPLIANT and CONTRADICTS copy the decisive sentence or short passage (at most three consecutive sentences) EXACTLY, character for character, from one passage into "evidence" and give that passage\'s number in "passage".',
  'For NOT_FOUND use "evidence": "" and "passage": 0.',
  '"confidence" is your probability (0 to 1) that the verdict is right; below 0.7 means the evidence is insufficient.',
  '"recommendation" says what to change or which document to add; null when COMPLIANT.',
  'Answer with one JSON object only.',
].join('\n');

const JUDGE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['verdict', 'confidence', 'passage', 'evidence', 'explanation', 'recommendation'],
  properties: {
    verdict: { type: 'string', enum: ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'] },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    passage: { type: 'integer', minimum: 0 },
    evidence: { type: 'string' },
    explanation: { type: 'string', minLength: 1 },
    recommendation: { type: ['string', 'null'] },
  },
} as const;

// Numbers outside the schema's bounds are accepted here and handled in `toJudgement` (a confidence out
// of [0, 1] is not trusted; a passage number that names no passage is no citation): servers whose
// constrained decoding enforces types but not `minimum`/`maximum` (llama.cpp grammars) produce them,
// and a repair round-trip for them would fail a check over a number the code can handle.
const judgeAnswer = z.object({
  verdict: z.enum(['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND']),
  confidence: z.coerce.number(),
  passage: z.coerce.number().int().default(0),
  evidence: z.string().default(''),
  explanation: z.string().min(1),
  recommendation: z.string().nullable().optional(),
});

type JudgeAnswer = z.infer<typeof judgeAnswer>;

const BREAKDOWN_SYSTEM = [
  'You split one compliance requirement into atomic sub-requirements that can each be checked on their own.',
  'Split conjunctions ("and", ";"), lists and bullet points, and separate obligations with their own modal verb (shall, must, should, may).',
  'Keep a choice ("A or B") together. Each part must be a full sentence that keeps the subject and modal verb of the original.',
  'Never add obligations that are not in the requirement. A requirement that is already atomic comes back as a single part, unchanged.',
  'Answer with one JSON object only: {"parts": ["...", "..."]}.',
].join('\n');

const BREAKDOWN_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['parts'],
  properties: { parts: { type: 'array', minItems: 1, maxItems: MAX_PARTS, items: { type: 'string' } } },
} as const;

const breakdownAnswer = z.object({ parts: z.array(z.string()).min(1) });

function passageHeader(p: PassageInput, i: number): string {
  const pages = p.startPage == null ? '' : p.endPage != null && p.endPage !== p.startPage ? `, pages ${p.startPage}-${p.endPage}` : `, page ${p.startPage}`;
  return `[${i + 1}] ${p.fileName}${pages}${p.section ? ` (section: ${p.section})` : ''}`;
}

/** The user message of a verdict request: the requirement, what must be true when framing was taken off, the passages. */
export function judgePrompt(requirement: string, passages: PassageInput[]): string {
  const reading = readRequirement(requirement);
  const core = reading.framing ? `\nWhat must be true (without the framing "${reading.framing}"):\n${reading.core}\n` : '';
  const context = passages.map((p, i) => `${passageHeader(p, i)}\n${p.text.slice(0, MAX_PASSAGE_CHARS)}`).join('\n\n');
  return `Requirement:\n${requirement}\n${core}\nPassages:\n${context}`;
}

/**
 * The chat-model judge: the model decides the verdict and quotes its evidence; the quote is then made
 * verbatim in code (`resolveEvidence` of `@kb/text`): a quote found in the cited chunk (whitespace
 * normalised) is kept, a paraphrase is repaired to the chunk sentence it paraphrases, and a quote that
 * cannot be traced caps the confidence at {@link UNSUPPORTED_CONFIDENCE_CAP}. The same calibration rules as
 * the embedded judge then apply (`calibrate`): a verdict whose quote the calibrated embedded judge reads as
 * not addressing the requirement, or a NOT_FOUND where the embedded judge confidently found evidence, is
 * capped below 0.7 with a note. With no passages at all the model is not called (NOT_FOUND from the
 * embedded judge). Breakdown asks the model for atomic parts. A structured answer still invalid after one
 * repair (`invalid_output`) is not an outage: the judgement is NOT_FOUND at confidence 0 saying so, and a
 * breakdown falls back to the embedded one.
 *
 * @throws ModelProviderError (from `@kb/models`) when the provider fails after retries (HTTP, network, timeout).
 */
export class ModelJudge implements RequirementJudge {
  constructor(
    private readonly chat: ChatModel,
    private readonly embedded: EmbeddedJudge,
  ) {}

  get model(): string {
    return this.chat.model;
  }

  async judge(requirement: string, passages: PassageInput[], signal?: AbortSignal): Promise<{ judgement: Judgement; calls: CallUsage[] }> {
    const usable = passages.filter((p) => (p.text ?? '').trim().length > 0);
    if (usable.length === 0) {
      const { judgement } = await this.embedded.judge(requirement, [], signal);
      return { judgement, calls: [] };
    }
    const answer = await completeStep(
      this.chat,
      {
        name: 'compliance_verdict',
        system: JUDGE_SYSTEM,
        user: judgePrompt(requirement, usable),
        jsonSchema: JUDGE_SCHEMA,
        temperature: 0,
      },
      judgeAnswer,
      signal,
    );
    if ('unusable' in answer) {
      const err = answer.unusable;
      // The model's answer stayed unreadable after the repair (e.g. a small model looping until the
      // token limit): nothing backs a verdict, so this requirement says so instead of failing the check.
      const usage = err.usage ?? NO_USAGE;
      return {
        judgement: {
          verdict: 'NOT_FOUND',
          confidence: 0,
          evidence: null,
          explanation: `The model's answer could not be read as a verdict (${err.message}), so no verdict can be backed by evidence.`,
          recommendation: 'Check this requirement again, or review it against the documents by hand.',
          usage,
        },
        calls: [{ model: this.chat.model, usage }],
      };
    }
    const { value, result } = answer;
    const calls: CallUsage[] = [{ model: result.model || this.chat.model, usage: result.usage }];
    const judgement = await this.calibrate(requirement, usable, this.toJudgement(requirement, usable, value, result.usage), signal);
    return { judgement, calls };
  }

  /**
   * Applies the embedded judge's calibration to a model verdict: COMPLIANT/CONTRADICTS whose verbatim
   * evidence, judged alone, the embedded judge reads as not addressing the requirement (P(NOT_FOUND) ≥
   * {@link EVIDENCE_SUPPORT_MIN}) is capped at {@link UNSUPPORTED_CONFIDENCE_CAP}; NOT_FOUND while the
   * embedded judge is confident (≥ 0.7) of a COMPLIANT or CONTRADICTS on the same passages is capped too.
   */
  private async calibrate(requirement: string, passages: PassageInput[], j: Judgement, signal?: AbortSignal): Promise<Judgement> {
    if (j.confidence < 0.7) return j;
    if (j.evidence) {
      const alone: PassageInput = { ...j.evidence.passage, text: j.evidence.quote, pageSpans: [], score: 1 };
      const { judgement: check } = await this.embedded.judge(requirement, [alone], signal);
      const notFound = check.probabilities?.NOT_FOUND ?? 0;
      if (notFound < EVIDENCE_SUPPORT_MIN) return j;
      return {
        ...j,
        confidence: Math.min(j.confidence, UNSUPPORTED_CONFIDENCE_CAP),
        explanation: `${j.explanation} (The quoted evidence does not clearly address the requirement: the calibrated check rates it ${Math.round(notFound * 100)}% likely to be unrelated, so the evidence may be insufficient.)`,
      };
    }
    const { judgement: check } = await this.embedded.judge(requirement, passages, signal);
    if (check.verdict === 'NOT_FOUND' || check.confidence < 0.7 || !check.evidence) return j;
    return {
      ...j,
      confidence: Math.min(j.confidence, UNSUPPORTED_CONFIDENCE_CAP),
      explanation: `${j.explanation} (The calibrated check found possible evidence that the model did not use: "${check.evidence.quote.replace(/\s+/g, ' ').trim().slice(0, 300)}", so "not found" may be wrong.)`,
    };
  }

  private toJudgement(requirement: string, passages: PassageInput[], answer: JudgeAnswer, usage: Judgement['usage']): Judgement {
    const a = { ...answer };
    if (a.confidence < 0 || a.confidence > 1) {
      // Not a probability: the model's own certainty is unknown, so the verdict is not confident.
      a.confidence = Math.min(Math.max(a.confidence, 0), UNSUPPORTED_CONFIDENCE_CAP);
      a.explanation += ' (The model gave a confidence outside 0 to 1, so this verdict is not treated as confident.)';
    }
    const recommendation =
      a.verdict === 'COMPLIANT' ? null : a.recommendation?.trim() || `Add or update a document that states how "${requirement.slice(0, 300)}" is met.`;
    if (a.verdict === 'NOT_FOUND') {
      return { verdict: 'NOT_FOUND', confidence: round3(a.confidence), evidence: null, explanation: a.explanation, recommendation, usage };
    }
    const resolved = resolveEvidence(a.evidence, passages, a.passage - 1, requirement);
    if (!resolved) {
      return {
        verdict: 'NOT_FOUND',
        confidence: Math.min(a.confidence, UNSUPPORTED_CONFIDENCE_CAP),
        evidence: null,
        explanation: `${a.explanation} (The model cited no usable passage, so no verdict can be backed by evidence.)`,
        recommendation: recommendation ?? `Add a document that states how "${requirement.slice(0, 300)}" is met.`,
        usage,
      };
    }
    const quote = makeQuote(resolved.passage, resolved.start, resolved.end);
    let confidence = a.confidence;
    let explanation = a.explanation;
    if (resolved.resolution === 'repaired') explanation += ' (Evidence quoted from the source sentence the model paraphrased.)';
    if (resolved.resolution === 'unsupported') {
      confidence = Math.min(confidence, UNSUPPORTED_CONFIDENCE_CAP);
      explanation += " (The model's quote was not found in the cited document; the closest sentence is shown and the evidence may be insufficient.)";
    }
    return { verdict: a.verdict, confidence: round3(confidence), evidence: quote, explanation, recommendation, usage };
  }

  async breakDown(requirement: string, signal?: AbortSignal): Promise<{ parts: string[]; calls: CallUsage[] }> {
    const answer = await completeStep(
      this.chat,
      {
        name: 'requirement_breakdown',
        system: BREAKDOWN_SYSTEM,
        user: requirement,
        jsonSchema: BREAKDOWN_SCHEMA,
        temperature: 0,
      },
      breakdownAnswer,
      signal,
    );
    if ('unusable' in answer) {
      // An unreadable breakdown: the embedded rule-based breakdown instead (the parts are still judged).
      return { parts: breakDownRequirement(requirement), calls: [{ model: this.chat.model, usage: answer.unusable.usage ?? NO_USAGE }] };
    }
    const { value, result } = answer;
    const parts = [...new Set(value.parts.map((p) => p.replace(/\s+/g, ' ').trim()).filter(Boolean))].slice(0, MAX_PARTS);
    return {
      parts: parts.length > 0 ? parts : breakDownRequirement(requirement),
      calls: [{ model: result.model || this.chat.model, usage: result.usage }],
    };
  }
}

const round3 = (x: number) => Math.round(Math.max(0, Math.min(1, x)) * 1000) / 1000;
