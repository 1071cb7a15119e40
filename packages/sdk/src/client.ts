import { AgentApi, AuditApi, BatchesApi, ChecksApi, DocumentsApi, OrganizationApi, ProjectsApi, ReviewsApi, RunsApi, WebhooksApi } from './namespaces';
import { KbTransport } from './transport';

export { RETRIED_STATUSES, sleep, type DataOf, type KbClientOptions } from './transport';

/**
 * The client of the service. Every operation of the API is a method of a resource namespace:
 * `kb.organization`, `kb.projects`, `kb.documents`, `kb.checks`, `kb.runs`, `kb.reviews`,
 * `kb.agent`, `kb.batches`, `kb.webhooks`, `kb.audit` (e.g. `await kb.projects.create({ name })`);
 * every list is a {@link PagedList} (`for await (const p of kb.projects.list())` across pages,
 * `.firstPage()` for one). Under them, the {@link KbTransport} it extends: `api`, the typed openapi-fetch
 * client, `data()` and `page()`, the authentication, idempotency keys, timeouts and retries. The
 * helper functions the namespaces call (uploads, waits, chat, check runs, batches) are exported too
 * and take a client as first argument.
 * @throws Error when no API key is given and `KB_API_KEY` is unset.
 */
export class KbClient extends KbTransport {
  /** The organization of the key. */
  readonly organization = new OrganizationApi(this);
  /** Projects: list, get, create, update, delete. */
  readonly projects = new ProjectsApi(this);
  /** Documents: list, get, reserve, process, delete, download, upload (in-memory files), wait, chunks, chunk, page. */
  readonly documents = new DocumentsApi(this);
  /** One requirement checked at once: verify. */
  readonly checks = new ChecksApi(this);
  /** Check runs: create, createAndWait, get, list, requirements, trigger, stop, rerun, compare, report, wait. */
  readonly runs = new RunsApi(this);
  /** Reviews of a run's requirements: set, clear. */
  readonly reviews = new ReviewsApi(this);
  /** Answers: query, chat (streamed), chatText. */
  readonly agent = new AgentApi(this);
  /** Batches of questions: create, get, list, results, export, wait. */
  readonly batches = new BatchesApi(this);
  /** Webhook endpoints: create, list, get, update, delete, deliveries, retryDelivery. */
  readonly webhooks = new WebhooksApi(this);
  /** The audit log: list. */
  readonly audit = new AuditApi(this);
}
