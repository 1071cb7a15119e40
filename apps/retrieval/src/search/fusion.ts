import { reciprocalRankFusion as fuseRanks, RRF_K } from '@kb/common';
import { ScoredId, SearchHit } from '../store/chunk-store';

/** Fusion functions selectable with `RETRIEVAL_FUSION`. */
export const FUSION_METHODS = ['convex', 'rrf', 'dbsf'] as const;
export type FusionMethod = (typeof FUSION_METHODS)[number];

/** Score normalisations of the convex combination (Bruch, Gai & Ingber 2023, §4). */
export const SCORE_NORMALIZATIONS = ['tmm', 'minmax'] as const;
export type ScoreNormalization = (typeof SCORE_NORMALIZATIONS)[number];

/**
 * How lexical (BM25) and dense (cosine) result lists are fused.
 * - `rrf`: reciprocal rank fusion with constant `k` (scores ignored, ranks only).
 * - `convex`: `alpha · φ(dense) + (1 − alpha) · φ(lexical)` with the normalisation φ of
 *   `normalization` (see {@link convexCombination}).
 * - `dbsf`: Qdrant's distribution-based score fusion (see {@link distributionBasedScoreFusion}).
 */
export type FusionSettings = { method: 'rrf'; k: number } | { method: 'convex'; alpha: number; normalization: ScoreNormalization } | { method: 'dbsf' };

/**
 * The shipped fusion: convex combination, theoretical-min-max normalisation, alpha = 0.7 (dense
 * weight). Chosen by `npm run eval:retrieval -- --split all --sweep` on SciFact train with BEIR
 * relevance: best nDCG@10 on the tuning half (claims with an even id, 415) among RRF k ∈ {5…100},
 * DBSF and convex alpha ∈ {0.1…0.9} × {tmm, minmax}: 0.721 against 0.703 for RRF k = 60; on the
 * report half (odd ids, 394): 0.756 against 0.748 (RRF) and 0.719 (BM25). Figures in docs/retrieval.md.
 */
export const DEFAULT_FUSION: FusionSettings = { method: 'convex', alpha: 0.7, normalization: 'tmm' };

/**
 * Theoretical lower bound of each score, used by `tmm` normalisation: BM25 is never negative, a
 * cosine similarity is at least −1 (Bruch et al. 2023, §4.1, "theoretical min-max").
 */
export const THEORETICAL_MIN = { lexical: 0, dense: -1 } as const;

/**
 * Reciprocal rank fusion of hit lists (@kb/common reciprocalRankFusion, chunks identified by id):
 * at most `topK` hits, ranks renumbered 1..n, `score` = fused score.
 */
export function reciprocalRankFusion(lists: SearchHit[][], topK: number, k = RRF_K): SearchHit[] {
  return withChunks(lists, rrfScored(lists.map(scoredIds), topK, k));
}

/**
 * Convex combination of a lexical and a dense result list (Bruch, Gai & Ingber, "An Analysis of
 * Fusion Functions for Hybrid Retrieval", ACM TOIS 2023): fused(d) = alpha · φ_dense(d) +
 * (1 − alpha) · φ_lex(d), where φ maps each list's scores into [0, 1]:
 * - `tmm` (theoretical min-max): (s − m) / (M − m) with m the score's theoretical minimum
 *   ({@link THEORETICAL_MIN}: 0 for BM25, −1 for cosine) and M the list's best score;
 * - `minmax`: the same with m = the list's lowest score.
 * A chunk absent from one list gets 0 from it (its score there is below the list's cut-off, which
 * `minmax` maps to 0 and `tmm` to at most the list's lowest value). A list whose scores are all
 * equal normalises to 1. Ties keep the order of first appearance (lexical first).
 * @param alpha weight of the dense list, in [0, 1] (0 = lexical only, 1 = dense only).
 * @returns at most `topK` hits, ranks 1..n, `score` = fused score in [0, 1].
 */
export function convexCombination(
  lexical: SearchHit[],
  dense: SearchHit[],
  topK: number,
  alpha: number,
  normalization: ScoreNormalization = 'tmm',
): SearchHit[] {
  return withChunks([lexical, dense], convexScored(scoredIds(lexical), scoredIds(dense), topK, alpha, normalization));
}

/**
 * Distribution-based score fusion as Qdrant's Query API runs it (`fusion: "dbsf"`, Qdrant
 * `lib/segment/src/common/score_fusion.rs`): each list's scores are mapped by
 * (s − (μ − 3σ)) / (6σ), with μ the mean and σ the sample standard deviation of that list (a
 * one-element list or equal scores give 0.5), then summed per chunk, unweighted. Computed here so
 * the embedded store can be measured against, and behave like, Qdrant's server-side fusion.
 */
export function distributionBasedScoreFusion(lists: SearchHit[][], topK: number): SearchHit[] {
  return withChunks(lists, dbsfScored(lists.map(scoredIds), topK));
}

/** Fuses a lexical and a dense list with `settings` (see {@link FusionSettings}). */
export function fuse(lexical: SearchHit[], dense: SearchHit[], topK: number, settings: FusionSettings = DEFAULT_FUSION): SearchHit[] {
  return withChunks([lexical, dense], fuseScored(scoredIds(lexical), scoredIds(dense), topK, settings));
}

/**
 * {@link fuse} on ids and scores alone: at most `topK` entries, best first, `score` = fused score.
 * Same order and scores as `fuse` on hits with these ids and scores.
 */
export function fuseScored(lexical: ScoredId[], dense: ScoredId[], topK: number, settings: FusionSettings = DEFAULT_FUSION): ScoredId[] {
  switch (settings.method) {
    case 'rrf':
      return rrfScored([lexical, dense], topK, settings.k);
    case 'dbsf':
      return dbsfScored([lexical, dense], topK);
    case 'convex':
      return convexScored(lexical, dense, topK, settings.alpha, settings.normalization);
  }
}

/** The (chunk id, score) pairs of `hits`, in their order: what {@link fuseScored} fuses. */
export function scoredIds(hits: SearchHit[]): ScoredId[] {
  return hits.map((h) => ({ id: h.chunk.id, score: h.score }));
}

/** Fused entries back to hits: each id's chunk from the first list holding it, ranks 1..n. */
function withChunks(lists: SearchHit[][], fused: ScoredId[]): SearchHit[] {
  const chunks = new Map<string, SearchHit['chunk']>();
  for (const list of lists) for (const hit of list) if (!chunks.has(hit.chunk.id)) chunks.set(hit.chunk.id, hit.chunk);
  return fused.map((e, i) => ({ chunk: chunks.get(e.id)!, score: e.score, rank: i + 1 }));
}

function rrfScored(lists: ScoredId[][], topK: number, k: number): ScoredId[] {
  return fuseRanks(lists, (e) => e.id, topK, k).map(({ item, score }) => ({ id: item.id, score }));
}

function convexScored(lexical: ScoredId[], dense: ScoredId[], topK: number, alpha: number, normalization: ScoreNormalization): ScoredId[] {
  if (!(alpha >= 0 && alpha <= 1)) throw new RangeError(`alpha must be in [0, 1] (got ${alpha})`);
  const fused = new Map<string, { score: number; order: number }>();
  let order = 0;
  const add = (list: ScoredId[], weight: number, theoreticalMin: number) => {
    if (list.length === 0) return;
    const scores = list.map((h) => h.score);
    const max = Math.max(...scores);
    const min = normalization === 'tmm' ? theoreticalMin : Math.min(...scores);
    const range = max - min;
    for (const hit of list) {
      const normalized = range > 0 ? (hit.score - min) / range : 1;
      const entry = fused.get(hit.id);
      if (entry) entry.score += weight * normalized;
      else fused.set(hit.id, { score: weight * normalized, order: order++ });
    }
  };
  add(lexical, 1 - alpha, THEORETICAL_MIN.lexical);
  add(dense, alpha, THEORETICAL_MIN.dense);
  return best(fused, topK);
}

function dbsfScored(lists: ScoredId[][], topK: number): ScoredId[] {
  const fused = new Map<string, { score: number; order: number }>();
  let order = 0;
  for (const list of lists) {
    let low = 0;
    let high = 0;
    if (list.length > 1) {
      const mean = list.reduce((sum, h) => sum + h.score, 0) / list.length;
      const variance = list.reduce((sum, h) => sum + (h.score - mean) ** 2, 0) / (list.length - 1);
      const sd = Math.sqrt(variance);
      low = mean - 3 * sd;
      high = mean + 3 * sd;
    }
    for (const hit of list) {
      const normalized = high > low ? (hit.score - low) / (high - low) : 0.5;
      const entry = fused.get(hit.id);
      if (entry) entry.score += normalized;
      else fused.set(hit.id, { score: normalized, order: order++ });
    }
  }
  return best(fused, topK);
}

function best(fused: Map<string, { score: number; order: number }>, topK: number): ScoredId[] {
  return [...fused.entries()]
    .sort(([, a], [, b]) => b.score - a.score || a.order - b.order)
    .slice(0, topK)
    .map(([id, e]) => ({ id, score: e.score }));
}
