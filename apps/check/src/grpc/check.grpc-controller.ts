import { AppError, pageWindow, UnaryHandlers } from '@kb/common';
import { runStatus } from '@kb/events';
import { checkV1 } from '@kb/proto';
import { NewRun, RunsService } from '../runs/runs.service';
import { VerifyService } from '../verification/verify.service';
import { toProtoComparison, toProtoRequirement, toProtoRun, toProtoVerdict } from './check.mappers';

/**
 * A requirement's `metadata_json` (the client's JSON object, serialised by the gateway; '' = none)
 * decoded for the use case.
 * @throws AppError VALIDATION_ERROR naming `requirements[i].metadata` when it is not a JSON object.
 */
function decodeMetadata(json: string, i: number): Record<string, unknown> | null {
  if (!json) return null;
  let metadata: unknown;
  try {
    metadata = JSON.parse(json);
  } catch {
    throw AppError.validation(`requirements[${i}].metadata must be a JSON object.`);
  }
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw AppError.validation(`requirements[${i}].metadata must be a JSON object.`);
  return metadata as Record<string, unknown>;
}

function toNewRun(req: checkV1.CreateRunRequest): NewRun {
  return {
    projectId: req.projectId,
    name: req.name,
    requirements: req.requirements.map((r, i) => ({ text: r.text, metadata: decodeMetadata(r.metadataJson, i) })),
    handbookIds: req.handbookIds,
  };
}

/**
 * gRPC controller of CheckService: maps the Verify request to the use case and its verdict back.
 * @param observe called with each verdict returned (metrics).
 */
export function verifyGrpcHandlers(
  verifier: VerifyService,
  observe: (verdict: string) => void = () => undefined,
): UnaryHandlers<typeof checkV1.CheckServiceService> {
  return {
    verify: async (req, ctx) => {
      const verdict = await verifier.verify(ctx, { projectId: req.projectId, requirement: req.requirement, handbookIds: req.handbookIds });
      observe(verdict.verdict);
      return toProtoVerdict(verdict);
    },
  };
}

/**
 * gRPC controller of CheckRunsService: decodes proto messages (page, `metadata_json`) into use-case
 * inputs and maps the run rows back to messages.
 */
export function runsGrpcHandlers(runs: RunsService): UnaryHandlers<typeof checkV1.CheckRunsServiceService> {
  return {
    createRun: async (req, ctx) => toProtoRun(await runs.create(ctx, toNewRun(req))),
    triggerRun: async (req, ctx) => {
      const run = await runs.trigger(ctx, req.id, { reprocess: req.reprocess, skipBreakdown: req.skipBreakdown });
      return { runId: run.id, taskId: run.task_id!, status: runStatus.toProto(run.status) };
    },
    stopRun: async (req, ctx) => toProtoRun(await runs.stop(ctx, req.id)),
    listRuns: async (req, ctx) => {
      const { runs: rows, total } = await runs.list(ctx, { projectId: req.projectId || null, ...pageWindow(req) });
      return { runs: rows.map((r) => toProtoRun(r)), total };
    },
    getRun: async (req, ctx) => {
      const { run, requirements } = await runs.get(ctx, req.id);
      return toProtoRun(run, requirements);
    },
    listRequirements: async (req, ctx) => ({ requirements: (await runs.requirements(ctx, req.id)).map(toProtoRequirement) }),
    setReview: async (req, ctx) =>
      toProtoRequirement(
        await runs.setReview(ctx, req.runId, req.requirementId, { decision: req.decision, reviewer: req.reviewer, comment: req.comment ?? null }),
      ),
    clearReview: async (req, ctx) => ({ removed: await runs.clearReview(ctx, req.runId, req.requirementId) }),
    rerunRun: async (req, ctx) => toProtoRun(await runs.rerun(ctx, req.id, req.name ?? null)),
    compareRuns: async (req, ctx) => toProtoComparison(await runs.compare(ctx, req.id, req.withId)),
    getReportPage: async (req, ctx) => {
      const { run, requirements } = await runs.reportPage(ctx, req.id, { offset: req.offset, limit: req.limit });
      return { run: toProtoRun(run), requirements: requirements.map(toProtoRequirement) };
    },
  };
}
