// @kb-platform/sdk for browsers: everything of the package that needs no Node built-in (`node:`
// modules), so a bundler targeting the browser (Vite, esbuild --platform=browser) can take it.
// The Node entry (index.ts) re-exports all of this plus the file-system uploads and verifyWebhook.
export { KbClient, type KbClientOptions, type DataOf } from './client';
export { KbApiError, KbTimeoutError } from './errors';
export { listChunks, iterateChunks, getChunk, getPage } from './chunks';
export { chat, chatText, type ChatEvent } from './chat';
export { runCheck, waitForCheckRun, setRequirementReview, clearRequirementReview, rerunCheckRun, compareCheckRuns, downloadReport, type ReportFormat } from './checks';
export { exportBatch, waitForBatch } from './batches';
export { listAuditEvents, type AuditEventFilter } from './audit';
export { contentTypeFor, CONTENT_TYPE_BY_EXTENSION, type UploadContentType } from './content-types';
export type { Page, PageOptions } from './webhooks';
export type * from './types';
export type { paths, components } from './generated/openapi';
