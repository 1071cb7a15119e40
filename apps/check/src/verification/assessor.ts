import { reciprocalRankFusion, type CallContext } from '@kb/common';
import { DocumentsClient, quotePlacement, RetrievalClient, searchKnowledge, type Passage } from '@kb/knowledge';
import { requirementCore, type Judgement } from '@kb/text';
import type { CallUsage, RequirementJudge } from './judges';
import type { StoredSource } from '../runs/run-rows';

/** Passages retrieved as candidate evidence for one requirement. */
export const VERIFY_TOP_K = 8;

/** Where a requirement is checked: a project's knowledge scope, or only some of its handbooks. */
export interface AssessmentScope {
  projectId: string;
  /** Handbook (document) ids to restrict to; empty = the whole project scope. */
  documentIds: string[];
}

/**
 * Where the assessor finds candidate evidence and checks that a cited document still exists. The service
 * goes through the retrieval and documents services ({@link knowledgeSearch}); `npm run eval:controls`
 * plugs the same retrieval code in process.
 */
export interface EvidenceSearch {
  /** The `topK` best passages for `query` in `scope` of the caller's org, best first (live documents only). */
  search(ctx: CallContext, query: string, scope: AssessmentScope, topK: number): Promise<Passage[]>;
  /** Which of `documentIds` still exist (ready or completed) in the caller's org. */
  live(ctx: CallContext, documentIds: string[]): Promise<Set<string>>;
}

/** {@link EvidenceSearch} over the retrieval and documents gRPC services (the check service's wiring). */
export function knowledgeSearch(clients: { retrieval: RetrievalClient; documents: DocumentsClient }): EvidenceSearch {
  return {
    search: (ctx, query, scope, topK) =>
      searchKnowledge(ctx, clients, query, { corpus: 'org', projectId: scope.projectId, documentIds: scope.documentIds }, topK),
    live: async (ctx, documentIds) => new Set((await clients.documents.filterLiveDocuments({ documentIds }, ctx)).documentIds),
  };
}

/** A verdict in API terms (service-api.md §2 "Single-requirement verdict"). */
export interface Assessment {
  verdict: Judgement['verdict'];
  confidence: number;
  /**
   * The explanation a check run whose passes corroborate each other shows instead, with `pCompliant` as the confidence
   * (Judgement.corroboratedExplanation; run-corroboration.ts); null when the verdict may not be raised. Not part of verify's answer.
   */
  corroboratedExplanation: string | null;
  /**
   * The embedded judge's calibrated P(COMPLIANT), 0 to 1, when its requirement-satisfaction (`rsm`) variant decided; null
   * for its other variants and for a chat-model judge. run-corroboration.ts raises or doubts only verdicts that have it:
   * its pass-share thresholds were measured with that variant (Judgement.variant).
   */
  pCompliant: number | null;
  evidence: string;
  explanation: string;
  recommendation: string | null;
  sources: StoredSource[];
  handbook: { id: string; name: string } | null;
  /** Model calls made, for usage records. */
  calls: CallUsage[];
}

/**
 * Checks one atomic requirement against a project's knowledge scope (or only some handbooks) of
 * the caller's org (`ctx.orgId`):
 * retrieves candidate passages for what the requirement asks (its core statement without framing such as
 * "Implement policies and procedures to", `requirementCore`; fused with the whole requirement's for a part of a
 * broken-down one), has the judge decide, and re-checks right before returning that the cited document still exists
 * (a deleted document is never cited).
 *
 * `assess` options: `signal` aborts model calls; `whole` is the requirement `requirement` was broken down from.
 * @param scope.documentIds handbook (document) ids to restrict to; empty = the whole project scope.
 * @throws AppError from retrieval/documents (SERVICE_UNAVAILABLE, …); ModelProviderError from a model judge.
 */
export class Assessor {
  constructor(
    private readonly evidence: EvidenceSearch,
    private readonly judge: RequirementJudge,
  ) {}

  async assess(
    ctx: CallContext,
    scope: AssessmentScope,
    requirement: string,
    options: { signal?: AbortSignal; whole?: string; title?: string | null } = {},
  ): Promise<Assessment> {
    const { signal, whole, title } = options;
    const passages = await this.candidates(ctx, scope, requirement, whole);
    const calls: CallUsage[] = [];
    // The judge may be a model (async): judge, then check right before returning that the cited
    // document still exists; if it was deleted meanwhile, judge again without its passages.
    let current = passages;
    for (;;) {
      const { judgement, calls: made } = await this.judge.judge(requirement, current, signal, title);
      calls.push(...made);
      if (await this.stillLive(ctx, judgement)) return toAssessment(judgement, calls);
      const dead = judgement.evidence!.passage.documentId;
      current = current.filter((p) => p.documentId !== dead);
    }
  }

  /**
   * The candidate passages for `requirement`: the best {@link VERIFY_TOP_K} for its core statement; for a part of a
   * broken-down requirement (`whole` given and its core differs), the reciprocal rank fusion of that list and the
   * whole requirement's, so the procedure that implements the requirement as a whole is read for each of its parts.
   */
  private async candidates(ctx: CallContext, scope: AssessmentScope, requirement: string, whole?: string): Promise<Passage[]> {
    const query = requirementCore(requirement);
    const wholeQuery = whole === undefined ? query : requirementCore(whole);
    if (wholeQuery === query) return this.evidence.search(ctx, query, scope, VERIFY_TOP_K);
    const lists = await Promise.all([query, wholeQuery].map((q) => this.evidence.search(ctx, q, scope, VERIFY_TOP_K)));
    return reciprocalRankFusion(lists, (p) => p.chunkId, VERIFY_TOP_K).map((e) => e.item);
  }

  private async stillLive(ctx: CallContext, j: Judgement): Promise<boolean> {
    if (!j.evidence) return true;
    return (await this.evidence.live(ctx, [j.evidence.passage.documentId])).has(j.evidence.passage.documentId);
  }
}

/**
 * Where the evidence stands (decisions.md "Where a quote stands"), computed once from the chunk's
 * stored word boxes and kept with the verdict: offsets in the chunk text and one box per line.
 */
function sourcePlacement(e: NonNullable<Judgement['evidence']>): Pick<StoredSource, 'location' | 'boxes'> {
  const { location, boxes } = quotePlacement(e.passage.text, e.passage.wordBoxes, e.quote, { start: e.start, end: e.end });
  return { location: location ? { char_start: location.charStart, char_end: location.charEnd } : null, boxes };
}

function toAssessment(j: Judgement, calls: CallUsage[]): Assessment {
  const e = j.evidence;
  return {
    verdict: j.verdict,
    confidence: j.confidence,
    corroboratedExplanation: j.corroboratedExplanation ?? null,
    pCompliant: j.variant === 'rsm' ? (j.probabilities?.COMPLIANT ?? null) : null,
    evidence: e ? e.quote : '',
    explanation: j.explanation,
    recommendation: j.verdict === 'COMPLIANT' ? null : (j.recommendation ?? 'Add a document that settles this requirement.'),
    sources: e
      ? [
          {
            handbook_id: e.passage.documentId,
            node_id: e.passage.chunkId,
            title: e.passage.fileName,
            start_page: e.startPage,
            end_page: e.endPage,
            section: e.passage.section ?? null,
            ...sourcePlacement(e),
          },
        ]
      : [],
    handbook: e ? { id: e.passage.documentId, name: e.passage.fileName } : null,
    calls,
  };
}
