/**
 * Constant `k` of reciprocal rank fusion: 60, the value of Cormack, Clarke & Büttcher, "Reciprocal
 * Rank Fusion outperforms Condorcet and individual Rank Learning Methods" (SIGIR 2009), also
 * Qdrant's and Elasticsearch's default.
 */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion of ranked lists (Cormack, Clarke & Büttcher 2009): score(x) =
 * Σ_lists 1 / (k + rank_list(x)), ranks 1-based; an item absent from a list adds nothing. Items are
 * the same across lists when `idOf` gives the same id; the first list's copy is kept. Ties keep the
 * order of first appearance (lists in argument order).
 *
 * @param lists ranked lists, best first.
 * @param idOf an item's identity across lists (a chunk id).
 * @param topK most items returned (≥ 0).
 * @param k the RRF constant (> 0; {@link RRF_K} by default).
 * @returns at most `topK` items with their fused score, best first.
 */
export function reciprocalRankFusion<T>(lists: readonly (readonly T[])[], idOf: (item: T) => string, topK: number, k = RRF_K): { item: T; score: number }[] {
  const fused = new Map<string, { item: T; score: number; order: number }>();
  let order = 0;
  for (const list of lists) {
    list.forEach((item, i) => {
      const add = 1 / (k + i + 1);
      const id = idOf(item);
      const entry = fused.get(id);
      if (entry) entry.score += add;
      else fused.set(id, { item, score: add, order: order++ });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, topK)
    .map(({ item, score }) => ({ item, score }));
}
