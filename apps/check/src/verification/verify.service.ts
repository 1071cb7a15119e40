import { CallContext } from '@kb/common';
import { providerAppError, sumUsage, type TokenUsage } from '@kb/models';
import { DocumentsClient, requireProject, resolveHandbooks } from '@kb/knowledge';
import { Assessment, Assessor } from './assessor';
import { UsageRecorder } from './usage';

/** A single-requirement verdict in domain terms: the assessment plus the tokens it used. */
export type Verification = Omit<Assessment, 'calls'> & { usage: TokenUsage };

/**
 * Verifies one requirement against the project knowledge scope (or only the given handbooks) and
 * returns the verdict shape of service-api.md §2 with verbatim evidence and the pages of the quote.
 * Records the tokens used (source `check.verify`).
 *
 * @throws AppError NOT_FOUND for an unknown project or handbook; SERVICE_UNAVAILABLE when a
 *   backing service (or the configured model, after retries) is down.
 */
export class VerifyService {
  constructor(private readonly deps: { documents: DocumentsClient; assessor: Assessor; usage: UsageRecorder }) {}

  async verify(ctx: CallContext, req: { projectId: string; requirement: string; handbookIds: string[] }): Promise<Verification> {
    await requireProject(ctx, this.deps.documents, req.projectId);
    const handbooks = await resolveHandbooks(ctx, this.deps.documents, req.handbookIds);
    const { calls, ...assessment } = await this.deps.assessor
      .assess(ctx, { projectId: req.projectId, documentIds: handbooks.map((h) => h.id) }, req.requirement)
      .catch((err: unknown) => {
        throw providerError(err);
      });
    await this.deps.usage.record(ctx.orgId, 'check.verify', calls);
    return { ...assessment, usage: sumUsage(calls.map((c) => c.usage)) };
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
