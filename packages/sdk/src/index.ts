// @kb-platform/sdk: the typed client (generated from the service's OpenAPI document) and helpers.
export { KbClient, type KbClientOptions, type DataOf } from './client';
export { KbApiError, KbTimeoutError } from './errors';
export { uploadFile, uploadFiles, uploadDirectory, waitForDocuments, filesOf, listDocuments, type ListDocumentsOptions, type UploadOptions, type UploadProgress, type UploadSummary } from './documents';
export { listChunks, iterateChunks, getChunk, getPage } from './chunks';
export { chat, chatText, type ChatEvent } from './chat';
export { runCheck, waitForCheckRun, setRequirementReview, clearRequirementReview, rerunCheckRun, compareCheckRuns, downloadReport, type ReportFormat } from './checks';
export { exportBatch, waitForBatch } from './batches';
export {
  createWebhook,
  listWebhooks,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  retryWebhookDelivery,
  verifyWebhook,
  KbWebhookVerificationError,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookVerificationReason,
  type Page,
  type PageOptions,
} from './webhooks';
export { listAuditEvents, type AuditEventFilter } from './audit';
export { contentTypeFor, CONTENT_TYPE_BY_EXTENSION, type UploadContentType } from './content-types';
export type * from './types';
export type { paths, components } from './generated/openapi';
