import { CallContext } from '@kb/common';
import { composeWithLiveSources, DocumentsClient, Passage, requireProject, resolveHandbooks, RetrievalClient, searchKnowledge } from '@kb/knowledge';
import { checkV1 } from '@kb/proto';
import { judgeRequirement } from '@kb/text';

/** Passages retrieved as candidate evidence for one requirement. */
export const VERIFY_TOP_K = 8;

/**
 * Verifies one requirement against the project knowledge scope (or only the given handbooks):
 * retrieves candidate passages, judges them with the embedded heuristic judge, and returns the
 * verdict shape of service-api.md §2 with verbatim evidence and the pages of the quote itself.
 *
 * @throws AppError NOT_FOUND for an unknown project or handbook; SERVICE_UNAVAILABLE when a
 *   backing service is down.
 */
export class VerifyService {
  constructor(private readonly clients: { retrieval: RetrievalClient; documents: DocumentsClient }) {}

  async verify(_ctx: CallContext, req: checkV1.VerifyRequest): Promise<checkV1.Verdict> {
    await requireProject(this.clients.documents, req.projectId);
    const handbooks = await resolveHandbooks(this.clients.documents, req.handbookIds);
    const passages: Passage[] = await searchKnowledge(
      this.clients,
      req.requirement,
      { corpus: 'org', projectId: req.projectId, documentIds: handbooks.map((h) => h.id) },
      VERIFY_TOP_K,
    );
    const judgement = await composeWithLiveSources(
      this.clients.documents,
      passages,
      (p) => judgeRequirement(req.requirement, p),
      (j) => (j.evidence ? [j.evidence.passage.documentId] : []),
    );
    const evidence = judgement.evidence;
    return {
      verdict: judgement.verdict,
      confidence: judgement.confidence,
      evidence: evidence ? evidence.quote : '',
      explanation: judgement.explanation,
      recommendation: judgement.recommendation ?? undefined,
      sources: evidence
        ? [
            {
              handbookId: evidence.passage.documentId,
              nodeId: evidence.passage.chunkId,
              title: evidence.passage.fileName,
              startPage: evidence.startPage ?? undefined,
              endPage: evidence.endPage ?? undefined,
            },
          ]
        : [],
      handbook: evidence ? { id: evidence.passage.documentId, name: evidence.passage.fileName } : undefined,
      usage: judgement.usage,
    };
  }
}
