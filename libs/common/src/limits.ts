import { AppError } from './errors';

/**
 * Size and length limits of the public API, defined once: the gateway's request DTOs (and through
 * them the OpenAPI document) and every service's own checks read these constants, so a limit
 * cannot differ between layers. Values come from service-api.md §1 and §8; where the contract says
 * "not shown", from decisions.md.
 */

/** Default `limit` of a list endpoint (service-api.md §1). */
export const PAGE_LIMIT_DEFAULT = 50;
/** Largest `limit` of a list endpoint (service-api.md §1); more is 400 VALIDATION_ERROR. */
export const PAGE_LIMIT_MAX = 200;
/** Largest `offset` of a list endpoint: the services carry it as a 32-bit integer (proto `int32`). */
export const PAGE_OFFSET_MAX = 2_147_483_647;

/** Ids one request may name in `document_ids` / `handbook_ids` (service-api.md §8). */
export const MAX_IDS_PER_REQUEST = 100;
/** Characters of a project name (service-api.md §8). */
export const PROJECT_NAME_MAX_CHARS = 200;
/** Characters of a project's or a webhook endpoint's description (service-api.md §8, decisions.md "Webhooks"). */
export const DESCRIPTION_MAX_CHARS = 500;
/** Characters of a document's file name (service-api.md §8). */
export const FILE_NAME_MAX_CHARS = 500;
/** Bytes of one uploaded file: 500 MB (service-api.md §8). */
export const MAX_UPLOAD_BYTES = 500 * 1024 * 1024;
/** Characters of a check run's name (the contract is silent; the same bound as a file name). */
export const RUN_NAME_MAX_CHARS = 500;
/** Requirements of one check run (service-api.md §8). */
export const MAX_REQUIREMENTS_PER_RUN = 1000;
/** Characters of one requirement's text (service-api.md §8). */
export const REQUIREMENT_MAX_CHARS = 5000;
/** Characters of a review's `reviewer` (decisions.md "Review of check results"). */
export const REVIEWER_MAX_CHARS = 200;
/** Characters of a review's `comment` (decisions.md "Review of check results"). */
export const REVIEW_COMMENT_MAX_CHARS = 2000;
/** Requirements per page when the gateway reads a run for its report (decisions.md "Reports"; docs/check.md "Reports"). */
export const REPORT_PAGE_MAX = 200;
/** Characters of an agent question and of each batch question (decisions.md "Agent", "Batches"). */
export const QUESTION_MAX_CHARS = 4000;
/** Questions of one batch (decisions.md "Batches"). */
export const MAX_BATCH_QUESTIONS = 500;
/** Characters of a batch's name (decisions.md "Batches"). */
export const BATCH_NAME_MAX_CHARS = 200;
/** Characters of a webhook endpoint's URL (decisions.md "Webhooks"). */
export const WEBHOOK_URL_MAX_CHARS = 2048;
/** Messages of one chat request (decisions.md "Agent"). */
export const MAX_CHAT_MESSAGES = 50;

/**
 * The page a list request asks for, checked the same way by every service.
 *
 * @param page `limit` (0 or absent = {@link PAGE_LIMIT_DEFAULT}; proto3 sends 0 for "not set") and
 *   `offset` (absent = 0), integers.
 * @returns `{ limit, offset }` with `limit` in [1, {@link PAGE_LIMIT_MAX}] and `offset` in
 *   [0, {@link PAGE_OFFSET_MAX}].
 * @throws AppError VALIDATION_ERROR when `limit` or `offset` is out of range (never clamped:
 *   decisions.md, "out-of-range limit/offset" is a 400).
 */
export function pageWindow(page: { limit?: number; offset?: number } | undefined): { limit: number; offset: number } {
  const limit = page?.limit || PAGE_LIMIT_DEFAULT;
  const offset = page?.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX) throw AppError.validation(`limit must be 1 to ${PAGE_LIMIT_MAX}.`);
  if (!Number.isInteger(offset) || offset < 0) throw AppError.validation('offset must be 0 or more.');
  if (offset > PAGE_OFFSET_MAX) throw AppError.validation(`offset must be at most ${PAGE_OFFSET_MAX}.`);
  return { limit, offset };
}
