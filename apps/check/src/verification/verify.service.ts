import { CallContext } from '@kb/common';
import { providerAppError, sumUsage } from '@kb/models';
import { DocumentsClient, requireProject, resolveHandbooks } from '@kb/knowledge';
import { checkV1 } from '@kb/proto';
import { Assessor } from './assessor';
import { UsageRecorder } from './usage';

/**
 * Verifies one requirement against the project knowledge scope (or only the given handbooks) and
 * returns the verdict shape of service-api.md §2 with verbatim evidence and the pages of the quote.
 * Records the tokens used (source `check.verify`).
 *
 * @throws AppError NOT_FOUND for an unknown project or handbook; SERVICE_UNAVAILABLE when a
 *   backing service (or the configured model, after retries) is down.
 */
export class VerifyService {
  constructor(
    private readonly deps: { documents: DocumentsClient; assessor: Assessor; usage: UsageRecorder },
  ) {}

  async verify(ctx: CallContext, req: checkV1.VerifyRequest): Promise<checkV1.Verdict> {
    await requireProject(this.deps.documents, req.projectId);
    const handbooks = await resolveHandbooks(this.deps.documents, req.handbookIds);
    const a = await this.deps.assessor
      .assess({ projectId: req.projectId, documentIds: handbooks.map((h) => h.id) }, req.requirement)
      .catch((err: unknown) => {
        throw providerError(err);
      });
    await this.deps.usage.record(ctx.orgId, 'check.verify', a.calls);
    const total = sumUsage(a.calls.map((c) => c.usage));
    return {
      verdict: a.verdict,
      confidence: a.confidence,
      evidence: a.evidence,
      explanation: a.explanation,
      recommendation: a.recommendation ?? undefined,
      sources: a.sources.map((s) => ({
        handbookId: s.handbook_id,
        nodeId: s.node_id,
        title: s.title,
        startPage: s.start_page ?? undefined,
        endPage: s.end_page ?? undefined,
        section: s.section ?? undefined,
      })),
      handbook: a.handbook ?? undefined,
      usage: total,
    };
  }
}

/**
 * Maps a model provider failure (after its retries) to the API: 504 TIMEOUT when it timed out, else
 * 503 SERVICE_UNAVAILABLE. Other errors pass through unchanged.
 */
export function providerError(err: unknown): unknown {
  return providerAppError(err, {
    unavailable: 'The configured model provider is unavailable. Retry shortly.',
    timeout: 'The configured model provider did not answer in time. Retry later.',
  });
}
