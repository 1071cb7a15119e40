import { SearchHit } from '../store/chunk-store';

/**
 * Constant `k` of reciprocal rank fusion: 60, the value of Cormack, Clarke & Büttcher, "Reciprocal
 * Rank Fusion outperforms Condorcet and individual Rank Learning Methods" (SIGIR 2009), also
 * Qdrant's and Elasticsearch's default.
 */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion of ranked lists: score(d) = Σ_lists 1 / (k + rank_list(d)), ranks 1-based;
 * a chunk absent from a list adds nothing. Ties keep the order of first appearance (lists in
 * argument order). Returns at most `topK` hits, ranks renumbered 1..n, `score` = fused score.
 */
export function reciprocalRankFusion(lists: SearchHit[][], topK: number, k = RRF_K): SearchHit[] {
  const fused = new Map<string, { hit: SearchHit; score: number; order: number }>();
  let order = 0;
  for (const list of lists) {
    list.forEach((hit, i) => {
      const add = 1 / (k + i + 1);
      const entry = fused.get(hit.chunk.id);
      if (entry) entry.score += add;
      else fused.set(hit.chunk.id, { hit, score: add, order: order++ });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, topK)
    .map((e, i) => ({ chunk: e.hit.chunk, score: e.score, rank: i + 1 }));
}
