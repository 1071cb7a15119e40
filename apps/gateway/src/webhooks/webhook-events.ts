import { type WebhookEventType } from '@kb/events';
import { Type } from '@nestjs/common';
import { BatchView } from '../agent/agent-views';
import { RequirementView, RunView } from '../check/check-runs.controller';
import { DocumentView } from '../common/api-models';

/** One webhook event type in the reference: the model of its `data` and when it is sent. */
export interface WebhookEventModel {
  model: Type<unknown>;
  when: string;
}

/**
 * The `data` of each webhook event type, as a response model of the reference, and when the event
 * is sent (docs/webhooks.md "Events"; libs/events/src/webhooks.ts presents each resource for both
 * the GET and the event): the document as GET /api/v2/documents/{id} shows it, the check run
 * without `requirements` (RunView), the requirement as GET …/requirements lists it, the batch
 * without `results` (BatchView). A Record over every WebhookEventType, so a new event type does not
 * compile without its model. The document lists them under OpenAPI 3.1 `webhooks`
 * (buildOpenApiDocument, addWebhooks).
 */
export const WEBHOOK_EVENT_MODELS: Readonly<Record<WebhookEventType, WebhookEventModel>> = {
  'document.ready': { model: DocumentView, when: 'A document reached `ready`.' },
  'document.completed': { model: DocumentView, when: 'A document reached `completed`.' },
  'document.failed': { model: DocumentView, when: 'A document failed: ingestion gave up, or the stuck-document sweeper failed it.' },
  'document.deleted': { model: DocumentView, when: 'A document was deleted; `data` is the document as it was.' },
  'check_run.completed': { model: RunView, when: 'A check run completed: its last requirement was stored, or a trigger found nothing left to check.' },
  'check_run.failed': { model: RunView, when: 'A check run failed: a worker gave up on it (e.g. the model provider unreachable at the last attempt).' },
  'check_run.stopped': { model: RunView, when: 'A check run was stopped (`POST /api/v2/check/runs/{id}/stop`).' },
  'batch.completed': { model: BatchView, when: 'A batch completed: its last question was recorded (failed questions still complete a batch).' },
  'batch.failed': { model: BatchView, when: 'A batch failed: its questions could not be queued. Final: no `batch.completed` follows.' },
  'check_run.requirement_reviewed': {
    model: RequirementView,
    when: "A requirement's review was set, replaced or removed; `data` is the requirement as `GET /api/v2/check/runs/{id}/requirements` lists it, with its `review` (null after a removal).",
  },
};
