// Names for the API's resources, derived from the generated document (src/generated/openapi.ts):
// each is the `data` of an operation's success response, or a request body, as declared there.
import type { DataOf } from './transport';
import type { components, paths } from './generated/openapi';

type SuccessBody<O> = O extends { responses: infer R }
  ? { [K in keyof R]: K extends 200 | 201 ? (R[K] extends { content: { 'application/json': infer B } } ? B : never) : never }[keyof R]
  : never;
type RequestBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Item<T> = T extends Array<infer I> ? I : T;

/** A document (GET /api/v2/documents/{id}). */
export type Document = DataOf<SuccessBody<paths['/api/v2/documents/{id}']['get']>>;
/** A document just reserved, with its `upload` slot (POST /api/v2/documents). */
export type ReservedDocument = DataOf<SuccessBody<paths['/api/v2/documents']['post']>>;
/** Result of POST /api/v2/documents/process. */
export type ProcessResult = DataOf<SuccessBody<paths['/api/v2/documents/process']['post']>>;
/** Download descriptor (GET /api/v2/documents/{id}/download). */
export type DownloadDescriptor = DataOf<SuccessBody<paths['/api/v2/documents/{id}/download']['get']>>;
/** A project. */
export type Project = DataOf<SuccessBody<paths['/api/v2/projects/{id}']['get']>>;
/** The organization of the API key. */
export type Organization = DataOf<SuccessBody<paths['/api/v2/organization']['get']>>;
/** Body of POST /api/v2/check/runs. */
export type CreateCheckRun = RequestBody<paths['/api/v2/check/runs']['post']>;
/** Body of POST /api/v2/check/runs/{id}/trigger. */
export type TriggerCheckRun = RequestBody<paths['/api/v2/check/runs/{id}/trigger']['post']>;
/** A check run as created (POST /api/v2/check/runs). */
export type CheckRun = DataOf<SuccessBody<paths['/api/v2/check/runs']['post']>>;
/** A check run with its requirements (GET /api/v2/check/runs/{id}). */
export type CheckRunDetail = DataOf<SuccessBody<paths['/api/v2/check/runs/{id}']['get']>>;
/** One requirement of a run with its sub-requirements (GET /api/v2/check/runs/{id}/requirements). */
export type CheckRequirement = Item<DataOf<SuccessBody<paths['/api/v2/check/runs/{id}/requirements']['get']>>>;
/** Body of PUT /api/v2/check/runs/{id}/requirements/{requirement_id}/review. */
export type ReviewRequirement = RequestBody<paths['/api/v2/check/runs/{id}/requirements/{requirement_id}/review']['put']>;
/** A person's review of a requirement (`review` of a requirement, null until reviewed). */
export type RequirementReview = NonNullable<CheckRequirement['review']>;
/** A run's counters with people's reviews applied (`review_summary`). */
export type ReviewSummary = CheckRun['review_summary'];
/** Body of POST /api/v2/check/runs/{id}/rerun. */
export type RerunCheckRun = NonNullable<RequestBody<paths['/api/v2/check/runs/{id}/rerun']['post']>>;
/** What changed between two runs (GET /api/v2/check/runs/{id}/compare?with=). */
export type CheckRunComparison = DataOf<SuccessBody<paths['/api/v2/check/runs/{id}/compare']['get']>>;
/** One listed difference of a comparison: `before` / `after` (null when the requirement is not in that run). */
export type CheckRequirementChange = Item<CheckRunComparison['changes']>;
/** Body of POST /api/v2/agent/query. */
export type QueryRequest = RequestBody<paths['/api/v2/agent/query']['post']>;
/** An answer with citations (POST /api/v2/agent/query). */
export type Answer = DataOf<SuccessBody<paths['/api/v2/agent/query']['post']>>;
/** Body of POST /api/v2/chat. */
export type ChatRequest = RequestBody<paths['/api/v2/chat']['post']>;
/** The reply of POST /api/v2/chat with `stream: false`. */
export type ChatReply = DataOf<SuccessBody<paths['/api/v2/chat']['post']>>;
/** Body of POST /api/v2/agent/batches. */
export type CreateBatch = RequestBody<paths['/api/v2/agent/batches']['post']>;
/** A batch summary (POST /api/v2/agent/batches). */
export type Batch = DataOf<SuccessBody<paths['/api/v2/agent/batches']['post']>>;
/** A batch with its results (GET /api/v2/agent/batches/{id}). */
export type BatchDetail = DataOf<SuccessBody<paths['/api/v2/agent/batches/{id}']['get']>>;
/** A chunk of a document: the passage behind a source's `node_id` (GET /api/v2/documents/{id}/chunks/{node_id}). */
export type DocumentChunk = DataOf<SuccessBody<paths['/api/v2/documents/{id}/chunks/{node_id}']['get']>>;
/** The size of one page of a document in PDF points (GET /api/v2/documents/{id}/pages/{n}). */
export type PageSize = DataOf<SuccessBody<paths['/api/v2/documents/{id}/pages/{n}']['get']>>;
/** Where a quote stands in its chunk's `text` (`location` of every source and citation). */
export type QuoteLocation = components['schemas']['QuoteLocationView'];
/** One line of a quote on its PDF page, points, origin top-left (`boxes` of every source and citation). */
export type QuoteBox = components['schemas']['QuoteBoxView'];
/** Body of POST /api/v2/webhooks. */
export type CreateWebhook = RequestBody<paths['/api/v2/webhooks']['post']>;
/** Body of PATCH /api/v2/webhooks/{id}. */
export type UpdateWebhook = RequestBody<paths['/api/v2/webhooks/{id}']['patch']>;
/** An endpoint just created, with its signing `secret` shown this once (POST /api/v2/webhooks). */
export type CreatedWebhook = DataOf<SuccessBody<paths['/api/v2/webhooks']['post']>>;
/** A webhook endpoint, without its secret (GET /api/v2/webhooks/{id}). */
export type WebhookEndpoint = DataOf<SuccessBody<paths['/api/v2/webhooks/{id}']['get']>>;
/** One delivery of the log (GET /api/v2/webhooks/{id}/deliveries). */
export type WebhookDelivery = Item<DataOf<SuccessBody<paths['/api/v2/webhooks/{id}/deliveries']['get']>>>;
/** An audit event (GET /api/v2/audit-events). */
export type AuditEvent = Item<DataOf<SuccessBody<paths['/api/v2/audit-events']['get']>>>;
/** Body of POST /api/v2/projects. */
export type CreateProject = RequestBody<paths['/api/v2/projects']['post']>;
/** Body of PATCH /api/v2/projects/{id}. */
export type UpdateProject = RequestBody<paths['/api/v2/projects/{id}']['patch']>;
/** Body of POST /api/v2/documents (a reservation of an upload slot). */
export type ReserveDocument = RequestBody<paths['/api/v2/documents']['post']>;
/** Result of DELETE /api/v2/documents. */
export type DeletedDocuments = DataOf<SuccessBody<paths['/api/v2/documents']['delete']>>;
/** Body of POST /api/v2/check/verify. */
export type VerifyRequirement = RequestBody<paths['/api/v2/check/verify']['post']>;
/** The verdict on one requirement (POST /api/v2/check/verify). */
export type Verdict = DataOf<SuccessBody<paths['/api/v2/check/verify']['post']>>;
/** Result of POST /api/v2/check/runs/{id}/trigger: `{ run_id, task_id, status }`. */
export type TriggeredRun = DataOf<SuccessBody<paths['/api/v2/check/runs/{id}/trigger']['post']>>;
