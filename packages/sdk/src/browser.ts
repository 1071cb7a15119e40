// @kb-platform/sdk for browsers (and workers): everything of the package that needs no Node
// built-in (`node:` modules), so a bundler targeting the browser (Vite, esbuild --platform=browser,
// rolldown) can take it; `@kb-platform/sdk/browser` resolves to its ES module build (dist/esm).
// The Node entry (index.ts) re-exports all of this plus the uploads from paths (files.ts).
export { KbClient, RETRIED_STATUSES, type KbClientOptions, type DataOf } from './client';
export { KbTransport } from './transport';
export {
  OrganizationApi,
  ProjectsApi,
  DocumentsApi,
  ChecksApi,
  RunsApi,
  ReviewsApi,
  AgentApi,
  BatchesApi,
  WebhooksApi,
  AuditApi,
  type CallOptions,
} from './namespaces';
export { PagedList, type Page, type PageOptions, type PageFetcher } from './paging';
export { pollIntervals, POLL_DEFAULTS, type PollOptions } from './polling';
export {
  KbApiError,
  KbValidationError,
  KbAuthenticationError,
  KbQuotaExceededError,
  KbForbiddenError,
  KbAgentNotEnabledError,
  KbNotFoundError,
  KbMethodNotAllowedError,
  KbConflictError,
  KbPayloadTooLargeError,
  KbRateLimitError,
  KbInternalError,
  KbServiceUnavailableError,
  KbServiceTimeoutError,
  KbTimeoutError,
  KbConnectionError,
  ERROR_CLASS_BY_CODE,
} from './errors';
export {
  uploadBlobs,
  uploadBlob,
  waitForDocuments,
  listDocuments,
  UploadPutError,
  type UploadItem,
  type ListDocumentsOptions,
  type UploadOptions,
  type UploadProgress,
  type UploadSummary,
} from './documents';
export { listChunks, iterateChunks, getChunk, getPage } from './chunks';
export { chat, chatText, type ChatEvent } from './chat';
export {
  runCheck,
  waitForCheckRun,
  setRequirementReview,
  clearRequirementReview,
  rerunCheckRun,
  compareCheckRuns,
  downloadReport,
  type ReportFormat,
  type ListCheckRunsOptions,
  type WaitForCheckRunOptions,
} from './checks';
export { exportBatch, waitForBatch, type ListBatchesOptions, type WaitForBatchOptions } from './batches';
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
} from './webhooks';
export { listAuditEvents, type AuditEventFilter } from './audit';
export { contentTypeFor, CONTENT_TYPE_BY_EXTENSION, UPLOAD_CONTENT_TYPES, type UploadContentType } from './content-types';
export type * from './types';
export type { paths, components } from './generated/openapi';
