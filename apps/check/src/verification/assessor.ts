import type { CallContext } from '@kb/common';
import { DocumentsClient, RetrievalClient, searchKnowledge } from '@kb/knowledge';
import type { Judgement } from '@kb/text';
import type { CallUsage, RequirementJudge } from './judges';

/** Passages retrieved as candidate evidence for one requirement. */
export const VERIFY_TOP_K = 8;

/** A verdict in API terms (service-api.md §2 "Single-requirement verdict"). */
export interface Assessment {
  verdict: Judgement['verdict'];
  confidence: number;
  evidence: string;
  explanation: string;
  recommendation: string | null;
  sources: { handbook_id: string; node_id: string; title: string; start_page: number | null; end_page: number | null; section: string | null }[];
  handbook: { id: string; name: string } | null;
  /** Model calls made, for usage records. */
  calls: CallUsage[];
}

/**
 * Checks one atomic requirement against a project's knowledge scope (or only some handbooks) of
 * the caller's org (`ctx.orgId`):
 * retrieves candidate passages, has the judge decide, and re-checks right before returning that the
 * cited document still exists (a deleted document is never cited).
 *
 * @param scope.documentIds handbook (document) ids to restrict to; empty = the whole project scope.
 * @throws AppError from retrieval/documents (SERVICE_UNAVAILABLE, …); ModelProviderError from a model judge.
 */
export class Assessor {
  constructor(
    private readonly clients: { retrieval: RetrievalClient; documents: DocumentsClient },
    private readonly judge: RequirementJudge,
  ) {}

  async assess(ctx: CallContext, scope: { projectId: string; documentIds: string[] }, requirement: string, signal?: AbortSignal): Promise<Assessment> {
    const passages = await searchKnowledge(ctx, this.clients, requirement, { corpus: 'org', projectId: scope.projectId, documentIds: scope.documentIds }, VERIFY_TOP_K);
    const calls: CallUsage[] = [];
    // The judge may be a model (async): judge, then check right before returning that the cited
    // document still exists; if it was deleted meanwhile, judge again without its passages.
    let current = passages;
    for (;;) {
      const { judgement, calls: made } = await this.judge.judge(requirement, current, signal);
      calls.push(...made);
      if (await this.stillLive(ctx, judgement)) return toAssessment(judgement, calls);
      const dead = judgement.evidence!.passage.documentId;
      current = current.filter((p) => p.documentId !== dead);
    }
  }

  private async stillLive(ctx: CallContext, j: Judgement): Promise<boolean> {
    if (!j.evidence) return true;
    const res = await this.clients.documents.filterLiveDocuments({ documentIds: [j.evidence.passage.documentId] }, ctx);
    return res.documentIds.includes(j.evidence.passage.documentId);
  }
}

function toAssessment(j: Judgement, calls: CallUsage[]): Assessment {
  const e = j.evidence;
  return {
    verdict: j.verdict,
    confidence: j.confidence,
    evidence: e ? e.quote : '',
    explanation: j.explanation,
    recommendation: j.verdict === 'COMPLIANT' ? null : j.recommendation ?? 'Add a document that settles this requirement.',
    sources: e
      ? [{ handbook_id: e.passage.documentId, node_id: e.passage.chunkId, title: e.passage.fileName, start_page: e.startPage, end_page: e.endPage, section: e.passage.section ?? null }]
      : [],
    handbook: e ? { id: e.passage.documentId, name: e.passage.fileName } : null,
    calls,
  };
}
