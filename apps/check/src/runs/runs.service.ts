import { AppError, CallContext, ErrorCode, isUuid, Logger, MAX_REQUIREMENTS_PER_RUN, REQUIREMENT_MAX_CHARS, RUN_NAME_MAX_CHARS, pageWindow } from '@kb/common';
import { CheckRequirementsRequestedEvent } from '@kb/events';
import { DocumentsClient, requireProject, resolveHandbooks } from '@kb/knowledge';
import { checkV1 } from '@kb/proto';
import { RequirementRow, RunRow, RunsRepository, SubRequirementRow } from './runs.repository';
import { toProtoRun } from './run-events';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

export { toProtoRun };

export function toProtoRequirement(r: RequirementRow, subs: SubRequirementRow[]): checkV1.Requirement {
  return {
    id: r.id,
    runId: r.run_id,
    text: r.text,
    orderIndex: r.order_index,
    status: r.status,
    metadataJson: r.metadata === null || r.metadata === undefined ? '' : JSON.stringify(r.metadata),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    subRequirements: subs.map((s) => ({
      id: s.id,
      requirementId: s.requirement_id,
      text: s.text,
      justification: s.justification,
      score: s.score,
      status: s.status,
      hasSources: s.sources !== null,
      sources: (s.sources ?? []).map((src) => ({
        handbookId: src.handbook_id,
        nodeId: src.node_id,
        title: src.title,
        startPage: src.start_page ?? undefined,
        endPage: src.end_page ?? undefined,
        section: src.section ?? undefined,
      })),
    })),
  };
}

/**
 * Check-run use cases: create, trigger, stop, list, detail, requirements (service-api.md §4 "Check",
 * decisions.md "Check"). Trigger publishes the run's pending requirements as JetStream work items
 * (groups of `groupSize`), processed by RunWorker in any replica.
 */
export class RunsService {
  constructor(
    private readonly deps: {
      repository: RunsRepository;
      documents: DocumentsClient;
      publishWork: (item: CheckRequirementsRequestedEvent, msgId: string) => Promise<void>;
      groupSize: number;
      logger: Logger;
    },
  ) {}

  async create(ctx: CallContext, req: checkV1.CreateRunRequest): Promise<checkV1.CheckRun> {
    if (!isUuid(req.projectId)) throw AppError.validation('project_id must be a UUID.');
    const name = (req.name ?? '').trim();
    if (!name || name.length > RUN_NAME_MAX_CHARS) throw AppError.validation(`name must be 1 to ${RUN_NAME_MAX_CHARS} characters.`);
    if (req.requirements.length < 1 || req.requirements.length > MAX_REQUIREMENTS_PER_RUN)
      throw AppError.validation(`requirements must have 1 to ${MAX_REQUIREMENTS_PER_RUN} items.`);
    const requirements = req.requirements.map((r, i) => {
      const text = (r.text ?? '').trim();
      if (!text || r.text.length > REQUIREMENT_MAX_CHARS)
        throw AppError.validation(`requirements[${i}].text must be 1 to ${REQUIREMENT_MAX_CHARS} characters.`);
      let metadata: Record<string, unknown> | null = null;
      if (r.metadataJson) {
        try {
          metadata = JSON.parse(r.metadataJson);
        } catch {
          throw AppError.validation(`requirements[${i}].metadata must be a JSON object.`);
        }
        if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
          throw AppError.validation(`requirements[${i}].metadata must be a JSON object.`);
      }
      return { text, metadata };
    });
    for (const id of req.handbookIds) if (!isUuid(id)) throw AppError.validation('handbook_ids must contain only UUIDs.');
    await requireProject(this.deps.documents, req.projectId);
    const handbookIds = [...new Set(req.handbookIds)];
    const handbooks = await resolveHandbooks(this.deps.documents, handbookIds);
    const found = new Set(handbooks.map((h) => h.id));
    const missing = handbookIds.find((id) => !found.has(id));
    if (missing) throw AppError.notFound(`Handbook ${missing} not found.`);
    const run = await this.deps.repository.create(ctx.orgId, { projectId: req.projectId, name, handbookIds, requirements });
    return toProtoRun(run);
  }

  /**
   * Trigger: pending/stopped/failed/completed → processing (or straight to completed when nothing is left),
   * then publishes the work items. If publishing fails the run is failed with a reason (retrying the trigger
   * resumes it) and SERVICE_UNAVAILABLE is returned.
   */
  async trigger(ctx: CallContext, req: checkV1.TriggerRunRequest): Promise<checkV1.TriggerRunResponse> {
    if (!isUuid(req.id)) throw AppError.validation('id must be a UUID.');
    const { run, requirementIds } = await this.deps.repository.trigger(ctx.orgId, req.id, { reprocess: req.reprocess, skipBreakdown: req.skipBreakdown });
    const size = Math.max(1, this.deps.groupSize);
    try {
      for (let i = 0, n = 0; i < requirementIds.length; i += size, n++) {
        const item: CheckRequirementsRequestedEvent = {
          orgId: ctx.orgId,
          runId: run.id,
          generation: run.generation,
          projectId: run.project_id,
          handbookIds: run.handbook_ids ?? [],
          skipBreakdown: run.skip_breakdown,
          requirementIds: requirementIds.slice(i, i + size),
        };
        await this.deps.publishWork(item, `check:${run.id}:${run.generation}:${n}`);
      }
    } catch (err) {
      this.deps.logger.error({ err, run_id: run.id }, 'could not queue check run work');
      await this.deps.repository.fail(ctx.orgId, run.id, run.generation, 'The run could not be queued for processing; trigger it again.');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The work queue is unavailable; the run was not started. Retry shortly.');
    }
    this.deps.logger.info({ run_id: run.id, task_id: run.task_id, requirements: requirementIds.length }, 'check run triggered');
    return { runId: run.id, taskId: run.task_id!, status: run.status };
  }

  async stop(ctx: CallContext, req: checkV1.RunId): Promise<checkV1.CheckRun> {
    if (!isUuid(req.id)) throw AppError.validation('id must be a UUID.');
    return toProtoRun(await this.deps.repository.stop(ctx.orgId, req.id));
  }

  async list(ctx: CallContext, req: checkV1.ListRunsRequest): Promise<checkV1.ListRunsResponse> {
    const { limit, offset } = pageWindow(req);
    if (req.projectId && !isUuid(req.projectId)) throw AppError.validation('project_id must be a UUID.');
    const { rows, total } = await this.deps.repository.listRuns(ctx.orgId, req.projectId || null, limit, offset);
    return { runs: rows.map((r) => toProtoRun(r)), total };
  }

  async get(ctx: CallContext, req: checkV1.RunId): Promise<checkV1.CheckRun> {
    const run = await this.requireRun(ctx, req.id);
    const reqs = await this.deps.repository.listRequirements(ctx.orgId, run.id);
    return toProtoRun(run, reqs.map((r) => toProtoRequirement(r.requirement, r.subs)));
  }

  async requirements(ctx: CallContext, req: checkV1.RunId): Promise<checkV1.ListRequirementsResponse> {
    const run = await this.requireRun(ctx, req.id);
    const reqs = await this.deps.repository.listRequirements(ctx.orgId, run.id);
    return { requirements: reqs.map((r) => toProtoRequirement(r.requirement, r.subs)) };
  }

  private async requireRun(ctx: CallContext, id: string): Promise<RunRow> {
    if (!isUuid(id)) throw AppError.validation('id must be a UUID.');
    const run = await this.deps.repository.findRun(ctx.orgId, id);
    if (!run) throw AppError.notFound('Check run not found.');
    return run;
  }
}
