import type { Logger } from '@kb/common';
import type { EmbeddingModel, LocalNliModel } from '@kb/models';
import {
  breakDownRequirement,
  judgeRequirement,
  NLI_CANDIDATES,
  rankEvidence,
  rankUnits,
  readRequirement,
  RSM_CANDIDATES,
  rsmSignals,
  semanticCandidates,
  topHeading,
  unitCandidates,
  unitKey,
  unitModelText,
  VERDICT_MODEL,
  verdictSignals,
  type Judgement,
  type PassageInput,
  type SemanticInput,
  type Usage,
} from '@kb/text';

/**
 * Name reported for the embedded judge in usage records: the trained, calibrated verdict model of
 * `libs/text/src/verdict-model.ts` (until issue 13 it was a hand-tuned heuristic reported as
 * `embedded-heuristic-judge`).
 */
export const EMBEDDED_JUDGE_MODEL = 'embedded-trained-judge';

/** One model (or heuristic) call's token usage, for quota records. */
export interface CallUsage {
  model: string;
  usage: Usage;
}

/**
 * The port through which check judges requirements and breaks them down: the embedded judge of
 * `@kb/text` when no chat model is configured, else a chat model (see model-judge.ts).
 */
export interface RequirementJudge {
  /** Name of the model reported in usage records. */
  readonly model: string;
  /**
   * Judges one atomic requirement against retrieved passages. The evidence of the returned judgement
   * is always a verbatim substring of one of `passages`.
   * @throws ModelProviderError when a configured model is unreachable after retries.
   */
  judge(requirement: string, passages: PassageInput[], signal?: AbortSignal, title?: string | null): Promise<{ judgement: Judgement; calls: CallUsage[] }>;
  /**
   * Splits a compound requirement into atomic sub-requirements (at least one).
   * @throws ModelProviderError when a configured model is unreachable after retries.
   */
  breakDown(requirement: string, signal?: AbortSignal): Promise<{ parts: string[]; calls: CallUsage[] }>;
}

/** Default number of sentence vectors kept by {@link SentenceVectorCache} (384 floats each: ~1.5 KB). */
export const SENTENCE_CACHE_ENTRIES = 20_000;

/**
 * Bounded least-recently-used cache of sentence vectors keyed by the sentence text (an embedding
 * depends on the text only), so the chunks that many requirements retrieve are embedded once.
 * A JavaScript `Map` keeps insertion order: a hit is re-inserted, the oldest key is evicted first.
 */
export class SentenceVectorCache {
  private readonly entries = new Map<string, Float32Array>();
  constructor(readonly capacity = SENTENCE_CACHE_ENTRIES) {}

  get(text: string): number[] | undefined {
    const v = this.entries.get(text);
    if (!v) return undefined;
    this.entries.delete(text);
    this.entries.set(text, v);
    return Array.from(v);
  }

  set(text: string, vector: number[]): void {
    this.entries.delete(text);
    this.entries.set(text, Float32Array.from(vector));
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Every cached (text, vector) pair, least recently used first. */
  *[Symbol.iterator](): IterableIterator<[string, Float32Array]> {
    yield* this.entries;
  }
}

/** Texts per embedding call of the judge (see {@link embedByLength}). */
export const JUDGE_EMBED_BATCH = 4;

/**
 * Embeds `texts` in calls of {@link JUDGE_EMBED_BATCH} texts of similar length (shortest first), at query
 * priority, and returns the vectors in input order. A forward pass pads every text to the longest of its
 * batch, so one 500-character PDF paragraph among 24 short sentences made the whole batch cost 24 long
 * ones: on the Debian Policy chunks of `npm run bench:check` a cold verify's embedding took 1,150 ms in one
 * call and 445 ms in length-sorted calls of 4 (busy 2-core machine; docs/check.md "Performance").
 */
export async function embedByLength(model: EmbeddingModel, texts: string[], signal?: AbortSignal): Promise<number[][]> {
  const order = texts.map((t, i) => ({ t, i })).sort((a, b) => a.t.length - b.t.length || a.i - b.i);
  const out = new Array<number[]>(texts.length);
  for (let k = 0; k < order.length; k += JUDGE_EMBED_BATCH) {
    const group = order.slice(k, k + JUDGE_EMBED_BATCH);
    const vectors = await model.embed(
      group.map((g) => g.t),
      signal,
      'query',
    );
    group.forEach((g, j) => (out[g.i] = vectors[j]));
  }
  return out;
}

/** True when `model` is the embedding model the judge's semantic variant was trained with. */
export function matchesTrainedEmbedding(model: EmbeddingModel): boolean {
  const trained = (VERDICT_MODEL as { embedding_model?: string }).embedding_model ?? '';
  const base = (name: string) => name.split('/').pop()!.toLowerCase();
  return !!trained && base(model.model) === base(trained);
}

/**
 * The embedded default (libs/text/src/judge.ts, breakdown.ts): a small trained model over computed signals.
 * With an embedding model (the in-process `LocalEmbeddingModel` of the check service) evidence is also
 * chosen by meaning: the requirement and up to `MAX_SEMANTIC_SENTENCES` candidate sentences are embedded
 * (sentences through a {@link SentenceVectorCache}). Without one — or with an embedding model other than
 * the one the judge was trained with, or when embedding fails — the judge runs its lexical variant,
 * whose confidence is calibrated for that case.
 */
export class EmbeddedJudge implements RequirementJudge {
  readonly model = EMBEDDED_JUDGE_MODEL;
  private readonly embeddings: EmbeddingModel | null;
  private readonly nli: LocalNliModel | null;
  private readonly rsm: LocalNliModel | null;

  /**
   * @param nli the entailment cross-encoder (`LocalNliModel` of `libs/text/models/judge-nli-minilm`), or null;
   *   used only together with embeddings, and for verdicts only when the committed judge has its `nli`
   *   variant (`signals` dumps its scores for `train:judge` regardless).
   * @param rsm the requirement-satisfaction model (`LocalNliModel` of `libs/text/models/judge-rsm-minilm`), or
   *   null; used only together with embeddings, and for verdicts when the committed judge has its `rsm` variant
   *   (then in place of the `nli` one; `signals` dumps its reading regardless).
   */
  constructor(
    embeddings: EmbeddingModel | null = null,
    private readonly cache = new SentenceVectorCache(),
    private readonly logger?: Logger,
    nli: LocalNliModel | null = null,
    rsm: LocalNliModel | null = null,
  ) {
    this.embeddings = embeddings && matchesTrainedEmbedding(embeddings) ? embeddings : null;
    if (embeddings && !this.embeddings)
      logger?.warn({ embeddings: embeddings.model }, 'the embedded judge was trained with another embedding model: judging lexically');
    this.nli = nli && this.embeddings ? nli : null;
    this.rsm = rsm && this.embeddings ? rsm : null;
  }

  /** Whether verdicts use sentence embeddings. */
  get semantic(): boolean {
    return this.embeddings !== null;
  }

  /** Whether verdicts use the requirement-satisfaction model (its reading of the candidate passages). */
  get satisfaction(): boolean {
    return this.rsm !== null && !!VERDICT_MODEL.variants.rsm;
  }

  /** Whether verdicts use the entailment cross-encoder too (never together with the requirement-satisfaction model). */
  get entailment(): boolean {
    return !this.satisfaction && this.nli !== null && !!VERDICT_MODEL.variants.nli;
  }

  async judge(requirement: string, passages: PassageInput[], signal?: AbortSignal, title?: string | null) {
    // The requirement-satisfaction variant matches evidence against the requirement's core statement.
    const matched = this.satisfaction ? readRequirement(requirement).core : requirement;
    const semantic = await this.semanticInput(matched, passages, signal);
    if (semantic && this.satisfaction) await this.satisfactionScores(matched, passages, semantic, signal);
    else if (semantic && this.entailment) await this.entailmentScores(requirement, passages, semantic, signal);
    // A sentence that states the requirement without its title word for word states it (the title names the subject).
    const judgement = judgeRequirement(requirement, passages, { semantic, title });
    return { judgement, calls: [{ model: this.model, usage: judgement.usage }] };
  }

  /**
   * Has the requirement-satisfaction model read the candidates (the best evidence unit, by `rankUnits`, of each of
   * the {@link RSM_CANDIDATES} chunks retrieval ranks highest: `unitCandidates`) against the core statement and
   * puts its reading into `semantic.rsm`, with each candidate's title similarity (`TITLE_PRIOR_WEIGHT`) unless
   * `titles` is false. A failure leaves it out (the judge then runs its embeddings-only variant) and is logged.
   */
  private async satisfactionScores(core: string, passages: PassageInput[], semantic: SemanticInput, signal?: AbortSignal, titles = true): Promise<void> {
    if (!this.rsm) return;
    const candidates = unitCandidates(rankUnits(core, passages, semantic), RSM_CANDIDATES);
    if (candidates.length === 0) return;
    try {
      const scores = await this.rsm.score(
        candidates.map((c) => ({ premise: unitModelText(c.unit), hypothesis: core })),
        signal,
      );
      const similarity = titles
        ? await this.titleSimilarities(
            semantic.query,
            candidates.map((c) => topHeading(c.unit.passage.section)),
            signal,
          )
        : [];
      semantic.rsm = candidates.map((unit, i) => ({
        unit,
        scores: [scores[i].entailment, scores[i].contradiction, scores[i].neutral],
        titleSimilarity: similarity[i] ?? null,
      }));
    } catch (error) {
      if (signal?.aborted) throw error;
      this.logger?.warn({ err: error }, 'requirement-satisfaction scoring failed: judging this requirement with embeddings only');
    }
  }

  /**
   * Cosine similarity of the core statement's vector `query` to each heading (null for a missing one), the headings
   * embedded through the sentence cache (a procedure's title is read by many requirements).
   * @throws what the embedding model throws (the caller then judges without the model's reading).
   */
  private async titleSimilarities(query: number[], headings: Array<string | null>, signal?: AbortSignal): Promise<Array<number | null>> {
    if (!this.embeddings) return headings.map(() => null);
    const missing = [...new Set(headings.filter((h): h is string => h !== null && this.cache.get(h) === undefined))];
    if (missing.length) (await embedByLength(this.embeddings, missing, signal)).forEach((v, i) => this.cache.set(missing[i], v));
    return headings.map((h) => {
      const v = h === null ? undefined : this.cache.get(h);
      return v ? v.reduce((sum, x, i) => sum + x * query[i], 0) : null;
    });
  }

  /**
   * Scores the first {@link NLI_CANDIDATES} candidate sentences (by `rankEvidence`, the judge's evidence
   * order) as premises against the requirement and puts the scores into `semantic.nli`. A failure leaves
   * them out (the judge then runs its embeddings-only variant) and is logged.
   */
  private async entailmentScores(requirement: string, passages: PassageInput[], semantic: SemanticInput, signal?: AbortSignal): Promise<void> {
    if (!this.nli) return;
    const units = rankEvidence(requirement, passages, semantic)
      .ranked.slice(0, NLI_CANDIDATES)
      .map((a) => a.unit);
    if (units.length === 0) return;
    try {
      const scores = await this.nli.score(
        units.map((u) => ({ premise: u.text, hypothesis: requirement })),
        signal,
      );
      semantic.nli = new Map(units.map((u, i) => [unitKey(u), [scores[i].entailment, scores[i].contradiction, scores[i].neutral] as [number, number, number]]));
    } catch (error) {
      if (signal?.aborted) throw error;
      this.logger?.warn({ err: error }, 'entailment scoring failed: judging this requirement with embeddings only');
    }
  }

  async breakDown(requirement: string) {
    return { parts: breakDownRequirement(requirement), calls: [] };
  }

  /**
   * The signal vectors of one example, for `train:judge`: lexical; semantic when embeddings are on; nli
   * (semantic + `NLI_SIGNAL_NAMES`) when the entailment model is on too, with `nliScores`, the
   * entailment model's [P(entailment), P(contradiction), P(neutral)] of the scored candidates, best first; rsm
   * (the requirement-satisfaction model's reading, `RSM_SIGNAL_NAMES`) when that model is on, its evidence chosen
   * without the title prior.
   */
  async signals(
    requirement: string,
    passages: PassageInput[],
  ): Promise<{
    lexical: number[];
    semantic: number[] | null;
    nli: number[] | null;
    nliScores: Array<[number, number, number]> | null;
    rsm: number[] | null;
    rsmScores: Array<[number, number, number]> | null;
  }> {
    const semantic = await this.semanticInput(requirement, passages);
    if (!semantic) return { lexical: verdictSignals(requirement, passages).vector, semantic: null, nli: null, nliScores: null, rsm: null, rsmScores: null };
    const plain = verdictSignals(requirement, passages, semantic).vector;
    await this.entailmentScores(requirement, passages, semantic);
    const withNli = semantic.nli ? verdictSignals(requirement, passages, semantic) : null;
    // The rsm variant's signals: evidence matched against the core statement, with the model's reading appended.
    let rsm: number[] | null = null;
    let rsmScores: Array<[number, number, number]> | null = null;
    if (this.rsm) {
      const core = readRequirement(requirement).core;
      const onCore = (await this.semanticInput(core, passages)) ?? semantic;
      // The verdict model is fitted on the evidence chosen without the title prior (docs/check.md "Evidence choice"):
      // fitted on the title-chosen evidence it measured worse on held-out ContractNLI and the negative control.
      await this.satisfactionScores(core, passages, onCore, undefined, false);
      const reading = rsmSignals(onCore.rsm);
      if (reading) {
        rsm = [...verdictSignals(core, passages, onCore, { modalityText: requirement }).vector, ...reading.vector];
        rsmScores = onCore.rsm!.map((r) => r.scores);
      }
    }
    return {
      lexical: verdictSignals(requirement, passages).vector,
      semantic: plain,
      nli: withNli?.nli ? [...withNli.vector, ...withNli.nli] : null,
      // [P(entailment), P(contradiction), P(neutral)] of each scored candidate in the judge's evidence order
      // (`rankEvidence`), so `train:judge` can study fewer candidates without scoring again.
      nliScores: semantic.nli ? [...semantic.nli.values()] : null,
      rsm,
      // [P(satisfies), P(contradicts), P(unrelated)] of each candidate in the first stage's order.
      rsmScores,
    };
  }

  /** Embeds the requirement and the candidate sentences (cached ones are not embedded again). */
  private async semanticInput(requirement: string, passages: PassageInput[], signal?: AbortSignal): Promise<SemanticInput | undefined> {
    if (!this.embeddings || passages.length === 0) return undefined;
    const units = semanticCandidates(requirement, passages);
    if (units.length === 0) return undefined;
    const missing = [...new Set(units.map((u) => u.text).filter((t) => this.cache.get(t) === undefined))];
    try {
      const vectors = await embedByLength(this.embeddings, [requirement, ...missing], signal);
      missing.forEach((t, i) => this.cache.set(t, vectors[i + 1]));
      const sentences = new Map<string, number[]>();
      for (const u of units) {
        const v = this.cache.get(u.text);
        if (v) sentences.set(unitKey(u), v);
      }
      return { query: vectors[0], sentences };
    } catch (error) {
      if (signal?.aborted) throw error;
      this.logger?.warn({ err: error }, 'sentence embedding failed: judging this requirement lexically');
      return undefined;
    }
  }
}
