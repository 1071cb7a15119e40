import { CallContext, currentContext, Delivery, Logger, runWithContext } from '@kb/common';
import { CheckRequirementsRequestedEvent, justificationOf } from '@kb/events';
import { ModelProviderError } from '@kb/models';
import { joinTitle, requirementTitle } from '@kb/text';
import { randomUUID } from 'node:crypto';
import { Assessor, type AssessmentScope } from '../verification/assessor';
import type { CallUsage, RequirementJudge } from '../verification/judges';
import { UsageRecorder } from '../verification/usage';
import { RunsRepository, SubRequirementResult } from './runs.repository';

/**
 * One requirement of a check run, as the run worker checks it: broken down into atomic sub-requirements
 * (unless `skipBreakdown`), each assessed against `scope` of the caller's org; the requirement passes only
 * when every sub-requirement is COMPLIANT (decisions.md "Check runs"). `npm run eval:controls` measures
 * this same function. With `options.title` (the requirement's `metadata.title`, {@link requirementTitle}) the
 * requirement is read as `title: text` ({@link joinTitle}) and the judge's word-for-word rule also reads it without
 * the title (docs/check.md "Processing").
 *
 * @param options.calls model calls are appended here as they are made (so usage is recorded even when a
 *   later call throws); @param options.signal stops between sub-requirements and aborts model calls.
 * @returns the sub-requirement results in breakdown order (fewer than the parts when aborted).
 * @throws what the judge or the assessor throws (ModelProviderError, AppError).
 */
export async function checkRequirement(
  deps: { judge: RequirementJudge; assessor: Assessor },
  ctx: CallContext,
  scope: AssessmentScope,
  text: string,
  options: { skipBreakdown?: boolean; signal?: AbortSignal; calls?: CallUsage[]; title?: string | null } = {},
): Promise<{ subs: SubRequirementResult[]; passed: boolean }> {
  const calls = options.calls ?? [];
  const whole = joinTitle(text, options.title);
  let parts = [whole];
  if (!options.skipBreakdown) {
    const b = await deps.judge.breakDown(whole, options.signal);
    calls.push(...b.calls);
    parts = b.parts.length > 0 ? b.parts : [whole];
  }
  const subs: SubRequirementResult[] = [];
  for (const part of parts) {
    if (options.signal?.aborted) break;
    const a = await deps.assessor.assess(ctx, scope, part, { signal: options.signal, whole, title: options.title });
    calls.push(...a.calls);
    subs.push({
      text: part,
      verdict: a.verdict,
      score: a.confidence,
      pCompliant: a.pCompliant,
      corroboratedJustification: a.corroboratedExplanation === null ? null : justificationOf(a.corroboratedExplanation, a.evidence),
      justification: justificationOf(a.explanation, a.evidence),
      sources: a.sources,
    });
  }
  return { subs, passed: subs.length > 0 && subs.every((x) => x.verdict === 'COMPLIANT') };
}

/** True for errors after which a run cannot continue: the model provider is unreachable after its retries. */
export function isProviderFailure(err: unknown): boolean {
  return err instanceof ModelProviderError;
}

/**
 * Processes `check.requirements.requested` work items: for each requirement of the group, claims it
 * (pending → processing, only for the run's current trigger generation), breaks it down into atomic
 * sub-requirements (unless `skipBreakdown`), checks each against the run's knowledge scope, and stores
 * the result with the run counters in one transaction (RunsRepository.complete, idempotent). A
 * redelivered item skips completed requirements; a stopped or re-triggered run discards results.
 *
 * Failure handling: a model provider unreachable after retries fails the run at once (finished
 * requirements are kept); other errors (a backing service down) are retried by JetStream with backoff
 * and fail the run on the last delivery attempt.
 */
export class RunWorker {
  constructor(
    private readonly deps: {
      repository: RunsRepository;
      assessor: Assessor;
      judge: RequirementJudge;
      usage: UsageRecorder;
      logger: Logger;
      /** How often a requirement being checked looks whether its run was stopped (ms). */
      watchIntervalMs?: number;
      /**
       * Observes throughput (Prometheus counters in production): called once per stored requirement
       * with `passed`/`failed`, and once per run that ends (`completed` or `failed`).
       */
      observe?: { requirementChecked(outcome: 'passed' | 'failed'): void; runEnded(status: 'completed' | 'failed'): void };
    },
  ) {}

  async process(item: CheckRequirementsRequestedEvent, delivery: Delivery): Promise<void> {
    const ctx: CallContext = { orgId: item.orgId, requestId: currentContext()?.requestId ?? randomUUID() };
    await runWithContext(ctx, async () => {
      for (const requirementId of item.requirementIds) {
        try {
          await this.processOne(ctx, item, requirementId, delivery);
        } catch (err) {
          if (isProviderFailure(err) || delivery.isLastAttempt) {
            const reason = isProviderFailure(err)
              ? 'The configured model provider is unreachable after retries; finished requirements are kept. Trigger the run again once it is back.'
              : 'A backing service stayed unavailable while checking; finished requirements are kept. Trigger the run again to resume.';
            const failed = await this.deps.repository.fail(item.orgId, item.runId, item.generation, reason);
            if (failed) this.deps.observe?.runEnded('failed');
            this.deps.logger.error({ err, run_id: item.runId, requirement_id: requirementId, failed }, 'check run failed');
            return;
          }
          throw err;
        }
      }
    });
  }

  private async processOne(ctx: CallContext, item: CheckRequirementsRequestedEvent, requirementId: string, delivery: Delivery): Promise<void> {
    const requirement = await this.deps.repository.claim(item.orgId, item.runId, item.generation, requirementId);
    if (!requirement) return;
    this.deps.logger.info({ run_id: item.runId, requirement_id: requirementId, attempt: delivery.attempt }, 'checking requirement');
    const calls: CallUsage[] = [];
    // A stop (or a new trigger) abandons the work: poll the run and abort model calls in flight.
    const abort = new AbortController();
    const watch = setInterval(() => {
      this.deps.repository
        .findRun(item.orgId, item.runId)
        .then((run) => {
          if (!run || run.status !== 'processing' || run.generation !== item.generation) abort.abort();
        })
        .catch(() => undefined);
    }, this.deps.watchIntervalMs ?? 2000);
    let subs: SubRequirementResult[];
    try {
      // A requirement's metadata.title is read with its text ("Automatic logoff: Implement …"; docs/check.md).
      const checked = await checkRequirement(this.deps, ctx, { projectId: item.projectId, documentIds: item.handbookIds }, requirement.text, {
        title: requirementTitle(requirement.metadata),
        skipBreakdown: item.skipBreakdown,
        signal: abort.signal,
        calls,
      });
      subs = checked.subs;
    } catch (err) {
      if (abort.signal.aborted) {
        this.deps.logger.info({ run_id: item.runId, requirement_id: requirementId }, 'requirement abandoned: the run was stopped');
        return;
      }
      throw err;
    } finally {
      clearInterval(watch);
      await this.deps.usage.record(item.orgId, 'check.run', calls);
    }
    if (abort.signal.aborted) return;
    const stored = await this.deps.repository.complete(item.orgId, item.runId, item.generation, requirementId, subs);
    if (stored.outcome === 'stored') {
      this.deps.observe?.requirementChecked(subs.length > 0 && subs.every((x) => x.verdict === 'COMPLIANT') ? 'passed' : 'failed');
      if (stored.runStatus === 'completed') this.deps.observe?.runEnded('completed');
    }
    this.deps.logger.info(
      { run_id: item.runId, requirement_id: requirementId, outcome: stored.outcome, run_status: stored.runStatus, attempt: delivery.attempt },
      'requirement checked',
    );
  }
}
