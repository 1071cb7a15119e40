import { ErrorCode, HTTP_STATUS_BY_CODE } from '@kb/common';
import { applyDecorators, Controller, Get, INestApplication, Type } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiExtension,
  ApiExtraModels,
  ApiOperation,
  type ApiOperationOptions,
  ApiResponse,
  ApiTags,
  DocumentBuilder,
  getSchemaPath,
  OpenAPIObject,
  SwaggerModule,
} from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import { isPublicPath } from './request-policy';
import { applyRules, isOptionalProperty, operationInputs, OperationInputs, validationMessages, validationRules } from './openapi-validation';
import { MAX_PAGE_NUMBER } from './validation';

type Json = Record<string, any>;

/** When each error code is returned (the error table of docs/gateway.md, in the reference). */
export const ERROR_CODE_MEANING: Record<ErrorCode, string> = {
  [ErrorCode.VALIDATION_ERROR]:
    'missing or invalid input: body fields, malformed JSON, wrong Content-Type, malformed UUIDs in path or query, unknown enum values, out-of-range limit/offset, bad Idempotency-Key',
  [ErrorCode.UNAUTHORIZED]: 'missing, unknown or revoked API key',
  [ErrorCode.QUOTA_EXCEEDED]: "the organization's monthly request or token quota is used up (resets on the 1st, 00:00 UTC)",
  [ErrorCode.FORBIDDEN]: 'the resource belongs to another organization (document delete)',
  [ErrorCode.AGENT_NOT_ENABLED]: 'chat_type safety while the Safety Assistant is not enabled',
  [ErrorCode.NOT_FOUND]: 'resource not found or of another organization; unknown route',
  [ErrorCode.METHOD_NOT_ALLOWED]: 'the path exists but not with this HTTP method; the Allow header lists the methods it serves',
  [ErrorCode.CONFLICT]: 'state conflict; Idempotency-Key reused with a different request or while the first is in flight',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'request body larger than the limit (GATEWAY_BODY_LIMIT_BYTES, 10 MB by default)',
  [ErrorCode.RATE_LIMITED]: 'per-key requests-per-minute limit exceeded; Retry-After says how many seconds to wait',
  [ErrorCode.INTERNAL_ERROR]: 'unexpected failure; no internals are disclosed, quote the request id',
  [ErrorCode.SERVICE_UNAVAILABLE]: 'a backing service or the database is unreachable, or the gateway is shutting down',
  [ErrorCode.TIMEOUT]: 'a backing service did not answer in time',
};

const EXAMPLE_MESSAGE: Record<ErrorCode, string> = {
  [ErrorCode.VALIDATION_ERROR]: 'name must be 1 to 200 characters',
  [ErrorCode.UNAUTHORIZED]: 'Invalid or revoked API key.',
  [ErrorCode.QUOTA_EXCEEDED]: 'Monthly request quota of 10000 requests exceeded; it resets at 2026-12-01T00:00:00.000Z.',
  [ErrorCode.FORBIDDEN]: 'Documents belong to another organization.',
  [ErrorCode.AGENT_NOT_ENABLED]: 'The Safety Assistant is not enabled for this organization.',
  [ErrorCode.NOT_FOUND]: 'Project 0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10 not found.',
  [ErrorCode.METHOD_NOT_ALLOWED]: 'Method PUT is not allowed on /api/v2/projects; it serves GET, HEAD, POST.',
  [ErrorCode.CONFLICT]: 'This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'The request body is larger than allowed.',
  [ErrorCode.RATE_LIMITED]: 'Rate limit of 100 requests per minute exceeded. Retry in 42 seconds.',
  [ErrorCode.INTERNAL_ERROR]: 'An internal error occurred. Retry later; if it persists, contact support with the request id.',
  [ErrorCode.SERVICE_UNAVAILABLE]: 'A backing service is unavailable. Retry shortly.',
  [ErrorCode.TIMEOUT]: 'The request took too long to complete. Retry later.',
};

const EXAMPLE_REQUEST_ID = '6c1d1a8e-4a0e-4a8f-9d1e-3f6c2b7a9e10';

/** The error envelope of one code, as an OpenAPI example. */
export function errorExample(code: ErrorCode): Json {
  return { success: false, error: { code, message: EXAMPLE_MESSAGE[code] }, request_id: EXAMPLE_REQUEST_ID };
}

function errorResponse(codes: ErrorCode[]): Json {
  return {
    description: codes.map((c) => `\`${c}\`: ${ERROR_CODE_MEANING[c]}`).join('; '),
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorEnvelope' },
        examples: Object.fromEntries(codes.map((c) => [c, { value: errorExample(c) }])),
      },
    },
  };
}

/**
 * A controller of the authenticated API: its routes under `path` (`api/v2/webhooks`), grouped
 * under the OpenAPI tag `tag` (`Webhooks`), each needing the bearer API key. The same as the stack
 * `@ApiTags(tag) @ApiBearerAuth() @Controller(path)`, applied in that stack's (bottom-up) order.
 */
export function ApiController(tag: string, path: string): ClassDecorator {
  return applyDecorators(Controller(path), ApiBearerAuth(), ApiTags(tag));
}

/**
 * Documents endpoint-specific error codes (the generic ones — 400, 401, 402, 404 for path ids,
 * 409/413 for POST, 429, 500, 503, 504 — are added to every operation by finalizeOpenApi).
 * Usable by any controller: `@ApiErrors(ErrorCode.CONFLICT, ErrorCode.FORBIDDEN)`.
 */
export function ApiErrors(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(HTTP_STATUS_BY_CODE[c], [...(byStatus.get(HTTP_STATUS_BY_CODE[c]) ?? []), c]);
  return applyDecorators(
    ...[...byStatus].map(([status, cs]) => {
      const r = errorResponse(cs);
      return ApiResponse({ status, description: r.description, content: r.content });
    }),
  );
}

/** How {@link ApiEnvelope} documents a success: its status (200), list shape and description. */
export interface EnvelopeOptions {
  status?: number;
  paginated?: boolean;
  list?: boolean;
  description?: string;
}

/**
 * A GET route answering the JSON envelope: the same as the stack `@Get(path)
 * @ApiOperation(operation) @ApiEnvelope(model, envelope)`, applied in that stack's (bottom-up)
 * order. `path` '' is the controller's own path (as `@Get()`). Routes answering a file or a
 * stream (CSV export, report) keep `@Get` with their own response decorators.
 */
export function ApiGet(path: string, operation: ApiOperationOptions, model: Type<unknown>, envelope: EnvelopeOptions = {}): MethodDecorator {
  return applyDecorators(ApiEnvelope(model, envelope), ApiOperation(operation), Get(path));
}

/**
 * Documents a success response wrapped in the envelope: `{ success, data: <model>, request_id }`,
 * with `pagination` and an array `data` when `paginated`, an array `data` without pagination when
 * `list`. `model` is a class with @ApiProperty
 * fields (its examples become the response example).
 */
export function ApiEnvelope(model: Type<unknown>, options: EnvelopeOptions = {}) {
  const data = options.paginated || options.list ? { type: 'array', items: { $ref: getSchemaPath(model) } } : { $ref: getSchemaPath(model) };
  return applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status: options.status ?? 200,
      description: options.description ?? 'Success envelope.',
      schema: {
        type: 'object',
        required: ['success', 'data', 'request_id', ...(options.paginated ? ['pagination'] : [])],
        properties: {
          success: { type: 'boolean', const: true },
          data,
          ...(options.paginated ? { pagination: { $ref: '#/components/schemas/Pagination' } } : {}),
          request_id: { type: 'string', example: EXAMPLE_REQUEST_ID },
        },
      } as Json,
    }),
  );
}

/**
 * Documents a `text/event-stream` success (Server-Sent Events) next to the JSON one of the same
 * status: `events` maps each event name to the class of its `data` (JSON). The reference shows it
 * as `oneOf` the frames `{ event, data }`, one per event, under the component `<name>`
 * (e.g. `ChatStreamEvent`); each frame is sent as `event: <event>` + `data: <JSON>` + a blank line.
 */
export function ApiEventStream(name: string, events: Record<string, Type<unknown>>, options: { status?: number; description?: string } = {}) {
  return applyDecorators(
    ApiExtraModels(...Object.values(events)),
    ApiExtension(EVENT_STREAM_EXTENSION, {
      name,
      status: options.status ?? 200,
      description: options.description ?? '',
      events: Object.fromEntries(Object.entries(events).map(([e, model]) => [e, getSchemaPath(model)])),
    }),
  );
}

/**
 * Documents a non-JSON success body (a file): `mediaType` (e.g. `text/csv`) with a string schema and
 * `options.example`, or several media types at once (`{ 'text/csv': { example }, 'application/pdf':
 * { binary: true } }`: a binary one gets `format: binary` and no example), and the response headers
 * it sets (e.g. `Content-Disposition`).
 */
export function ApiFileResponse(
  mediaType: string | Record<string, { example?: string; binary?: boolean }>,
  options: { status?: number; description: string; example?: string; headers?: Record<string, { description: string; example?: string }> },
) {
  const media = typeof mediaType === 'string' ? { [mediaType]: { example: options.example } } : mediaType;
  return ApiResponse({
    status: options.status ?? 200,
    description: options.description,
    content: Object.fromEntries(
      Object.entries(media).map(([type, m]: [string, { example?: string; binary?: boolean }]) => [
        type,
        m.binary
          ? { schema: { type: 'string', format: 'binary' } }
          : { schema: { type: 'string' }, ...(m.example !== undefined ? { example: m.example } : {}) },
      ]),
    ),
    headers: Object.fromEntries(
      Object.entries(options.headers ?? {}).map(([h, v]) => [
        h,
        { description: v.description, schema: { type: 'string', ...(v.example ? { example: v.example } : {}) } },
      ]),
    ),
  });
}

const EVENT_STREAM_EXTENSION = 'x-kb-event-stream';

const RATE_HEADERS: Json = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
};

const DESCRIPTION = `Projects, documents, compliance checks and grounded answers with citations.

**Authentication.** Every endpoint under \`/api/v2\` requires \`Authorization: Bearer <API_KEY>\`. Keys are created by the operator CLI (\`kbctl key create\`), shown once and stored only as a hash.

**Envelope.** Success: \`{ success: true, data, request_id }\` (+ \`pagination\` on lists). Error: \`{ success: false, error: { code, message }, request_id }\` — for every error, including unknown routes, malformed JSON and oversized bodies.

**Request id.** \`X-Request-Id\` is kept when it is 1–128 printable ASCII characters; any other value is accepted and replaced by a generated UUID (never refused); it is echoed in the header and in \`request_id\`, and carried to every backing service and log line.

**Rate limits.** Fixed one-minute window per API key (100/min by default, set per key), shared by all gateway replicas. \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` are on every authenticated response, errors included. Over the limit: 429 \`RATE_LIMITED\` with \`Retry-After\` (seconds).

**Quotas.** Monthly request and token caps per organization, reset on the 1st at 00:00 UTC. Over a cap: 402 \`QUOTA_EXCEEDED\`.

**Idempotency.** Any POST may carry \`Idempotency-Key\` (≤255 characters), scoped to the organization for 24 h. The same key and body replays the first response with \`Idempotent-Replayed: true\`; a different body, or a retry while the first is still running, gets 409 \`CONFLICT\`. 5xx outcomes are not stored (retry runs again); streamed responses (\`text/event-stream\`) are never replayed.

**Limits.** The request line and headers together: 16 KiB (16,384 bytes), so a URL with its query string must stay below that; larger → 431 \`VALIDATION_ERROR\` (without rate-limit headers: it is refused before the key is read). JSON bodies: 10 MB, nesting 32 levels. Text fields never hold NUL (U+0000) or lone UTF-16 surrogates (400 naming the field). Query integers (\`limit\`, \`offset\`) are plain decimal digits; \`offset\` is at most 2147483647.

**Errors.** ${Object.entries(ERROR_CODE_MEANING)
  .map(([c, m]) => `\`${c}\` (${HTTP_STATUS_BY_CODE[c as ErrorCode]}): ${m}.`)
  .join(' ')}`;

/**
 * The operationId of an operation whose `@ApiOperation` names none: the method name followed by the
 * controller's name without `Controller` (`WebhooksController.create` → `createWebhooks`). Every
 * operation of the gateway names its own (`@ApiOperation({ operationId: 'createProject', … })`).
 */
export function defaultOperationId(controllerKey: string, methodKey: string): string {
  return `${methodKey}${controllerKey.replace(/Controller$/, '')}`;
}

/** A webhook event type for the reference: the model of its `data` and when it is sent. */
export interface WebhookEventSpec {
  model: Type<unknown>;
  when: string;
}

/**
 * Builds the OpenAPI 3.1 document of the app from its controllers and decorators, writes the
 * class-validator rules of every DTO into its schema (applyValidationRules), finalizes it, then
 * adds the webhook events (addWebhooks), keyed by event type (`document.ready`…).
 */
export function buildOpenApiDocument(app: INestApplication, webhooks: Readonly<Record<string, WebhookEventSpec>> = {}): OpenAPIObject {
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('Knowledge Project and Compliance Service API')
      .setVersion('2')
      .setDescription(DESCRIPTION)
      .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
      // Relative: the gateway that serves this document (a local stack: http://localhost:8080).
      .addServer('/', 'The gateway that serves this document (`/docs/openapi.json`); a local `npm start` stack is http://localhost:8080.')
      .addBearerAuth(
        { type: 'http', scheme: 'bearer', description: 'API key: `Authorization: Bearer kb_…` (an opaque key created by `kbctl key create`, not a JWT).' },
        'bearer',
      )
      .build(),
    { operationIdFactory: defaultOperationId, extraModels: [...new Set(Object.values(webhooks).map((w) => w.model))] },
  );
  applyValidationRules(doc, operationInputs(app));
  return addWebhooks(finalizeOpenApi(doc), webhooks);
}

/** `document.ready` → `DocumentReady` (the stem of the event's schema and operation names). */
function eventStem(type: string): string {
  return type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** The Standard Webhooks headers of every delivery (docs/webhooks.md "Verifying a delivery"). */
const WEBHOOK_HEADERS: Json[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id (`id` of the body): the same on every attempt; de-duplicate on it.',
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix time (seconds) of this attempt; refuse one too far from now.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
    example: '1764547200',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` keyed by the endpoint\'s secret (Standard Webhooks); verify on the raw body.',
    schema: { type: 'string', pattern: '^v1,' },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
];

/**
 * The webhook events in OpenAPI 3.1 `webhooks` (which @nestjs/swagger only builds from controller
 * routes, and the events are no routes of the gateway): for each event type a schema
 * `<Stem>Event` (`{ id, type, created_at, org_id, data }`, `type` the event type, `data` a `$ref`
 * to the model's schema) and an operation `POST` named `<stem>Event` with the signature headers,
 * the body, and the answers the service reads (2xx within 10 s: delivered; anything else:
 * retried). Receivers' clients get typed payloads from it (openapi-typescript's `webhooks`).
 */
export function addWebhooks(doc: OpenAPIObject, webhooks: Readonly<Record<string, WebhookEventSpec>>): OpenAPIObject {
  const entries = Object.entries(webhooks);
  if (entries.length === 0) return doc;
  const d = doc as Json;
  const schemas = d.components.schemas as Json;
  const out: Json = {};
  for (const [type, { model, when }] of entries) {
    const name = `${eventStem(type)}Event`;
    if (!schemas[model.name]) throw new Error(`addWebhooks: ${type}: no schema ${model.name} in the document`);
    schemas[name] = {
      type: 'object',
      description: `The body of a \`${type}\` delivery. ${when}`,
      required: ['id', 'type', 'created_at', 'org_id', 'data'],
      properties: {
        id: {
          type: 'string',
          format: 'uuid',
          description: 'the event id (also the `webhook-id` header), the same on every attempt and for every endpoint',
          example: '5b0c1f5e-6a5e-4b47-9d63-4a1f2f0e8c11',
        },
        type: { type: 'string', enum: [type], example: type },
        created_at: { type: 'string', format: 'date-time', description: 'the time of the state change', example: '2026-11-24T01:02:03.456Z' },
        org_id: { type: 'string', example: '5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f' },
        data: { $ref: getSchemaPath(model.name) },
      },
    };
    const stem = eventStem(type);
    out[type] = {
      post: {
        operationId: `${stem.charAt(0).toLowerCase()}${stem.slice(1)}Event`,
        summary: `${type} event`,
        description: `${when} Sent as a POST to each enabled endpoint of the organization subscribed to \`${type}\` (or \`*\`), signed (Standard Webhooks), retried until a 2xx answer for 24 h (docs/webhooks.md).`,
        tags: ['webhooks'],
        security: [],
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: getSchemaPath(name) } } } },
        responses: {
          '2XX': { description: 'Delivered: any 2xx answer within 10 s (WEBHOOK_TIMEOUT_MS); the body is not read.' },
          '4XX': {
            description:
              'Any other answer (a 4xx such as 400 for a signature that does not verify, a 5xx, a redirect, no answer in time) is a failed attempt, retried with backoff.',
          },
        },
      },
    };
  }
  d.webhooks = out;
  return doc;
}

/**
 * Text fields of request bodies never hold NUL (U+0000): the gateway refuses them (invalidTextIn,
 * 400 naming the field). A string schema without its own pattern or enum gets `^[^\u0000]*$`
 * (also inside arrays). Lone surrogates, refused too, cannot be stated portably in a pattern: the
 * description of the API says so.
 */
function noNul(schema: Json): void {
  const types = [schema.type].flat();
  if (types.includes('string') && !schema.pattern && !schema.enum && !schema.format) schema.pattern = '^[^\\u0000]*$';
  if (schema.items && !schema.items.$ref) noNul(schema.items);
}

const SCHEMA_EXTRA = Symbol('kb:openapi-schema-extra');

/**
 * Adds JSON Schema keywords to a request DTO's schema for a rule that is about the object rather
 * than one field, e.g. `@ApiSchemaExtra({ minProperties: 1 })` or an `anyOf` of required fields
 * ("at least one of name or description"). Applied by applyValidationRules.
 */
export function ApiSchemaExtra(extra: Json): ClassDecorator {
  return (target) => Reflect.defineMetadata(SCHEMA_EXTRA, extra, target);
}

/** Every class class-validator holds rules for, by name (the name @nestjs/swagger gives its schema). */
function validatedClasses(): Map<string, new (...args: never[]) => unknown> {
  const storage = getMetadataStorage() as unknown as { validationMetadatas: Map<{ name: string }, ValidationMetadata[]> };
  const out = new Map<string, new (...args: never[]) => unknown>();
  for (const target of storage.validationMetadatas.keys()) if (target.name) out.set(target.name, target as new (...args: never[]) => unknown);
  return out;
}

/**
 * Makes the document state what validation enforces (one truth, the class-validator rules):
 * each request schema whose class has rules gets its properties' constraints and `required` list
 * from them (openapi-validation.ts applyRules), each query parameter of a DTO-validated query its
 * constraints and `required`, and each operation's 400 response one example per validated field,
 * with the message validation answers (`name must be 1 to 200 characters`, `limit must be at most 200`…).
 */
export function applyValidationRules(doc: OpenAPIObject, inputs: Map<string, OperationInputs>): void {
  const schemas = (doc.components?.schemas ?? {}) as Json;
  for (const [name, target] of validatedClasses()) {
    const schema = schemas[name];
    if (!schema?.properties) continue;
    const required: string[] = [];
    for (const [field, rules] of validationRules(target)) {
      const property = schema.properties[field];
      if (!property) continue;
      applyRules(property, rules);
      noNul(property);
      if (!isOptionalProperty(rules)) required.push(field);
    }
    if (required.length > 0) schema.required = required;
    else delete schema.required;
    Object.assign(schema, Reflect.getMetadata(SCHEMA_EXTRA, target) ?? {});
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const input = inputs.get(`${method} ${path}`);
      if (!input) continue;
      const operation = op as Json;
      for (const p of (operation.parameters ?? []) as Json[]) {
        if (p.in === 'path' && input.uuidParams.includes(p.name)) p.schema = { ...(p.schema ?? {}), type: 'string', format: 'uuid' };
        if (p.in === 'path' && input.pageParams.includes(p.name)) p.schema = { type: 'integer', minimum: 1, maximum: MAX_PAGE_NUMBER };
      }
      if (input.query) {
        const rules = validationRules(input.query);
        for (const p of (operation.parameters ?? []) as Json[]) {
          const r = p.in === 'query' ? rules.get(p.name) : undefined;
          if (!r) continue;
          p.schema ??= {};
          applyRules(p.schema, r);
          p.required = !isOptionalProperty(r);
        }
      }
      const examples: Array<[string, string]> = [
        ...input.uuidParams.map((name): [string, string] => [name, `${name} must be a UUID.`]),
        ...input.pageParams.map((name): [string, string] => [name, `${name} must be a page number: an integer from 1 to ${MAX_PAGE_NUMBER}.`]),
        ...(input.query ? validationMessages(input.query).map(({ field, message }): [string, string] => [field, message]) : []),
        ...(input.body ? validationMessages(input.body).map(({ field, message }): [string, string] => [field, message]) : []),
      ];
      if (examples.length === 0) continue;
      operation.responses ??= {};
      operation.responses['400'] ??= {
        description: `\`VALIDATION_ERROR\`: ${ERROR_CODE_MEANING[ErrorCode.VALIDATION_ERROR]}`,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/ErrorEnvelope' },
            examples: Object.fromEntries(
              examples.map(([field, message]) => [
                field,
                {
                  summary: `Invalid ${field}`,
                  value: { success: false, error: { code: ErrorCode.VALIDATION_ERROR, message }, request_id: EXAMPLE_REQUEST_ID },
                },
              ]),
            ),
          },
        },
      };
    }
  }
}

/**
 * OpenAPI links from each creation (a POST answering 201 whose `data` has an `id`) to the
 * operations on `<same path>/{id}…`: `{ operationId, parameters: { id: '$response.body#/data/id' } }`,
 * so clients and stateful testers (schemathesis) know where the new id goes.
 */
function addCreationLinks(d: Json): void {
  for (const [path, item] of Object.entries(d.paths as Json)) {
    const created = (item as Json).post?.responses?.['201'];
    const ref = created?.content?.['application/json']?.schema?.properties?.data?.$ref as string | undefined;
    if (!ref || !d.components.schemas[ref.replace('#/components/schemas/', '')]?.properties?.id) continue;
    const links: Json = {};
    for (const [other, otherItem] of Object.entries(d.paths as Json)) {
      // Only operations whose one path parameter is the new id (not `…/{id}/chunks/{node_id}`).
      if (!other.startsWith(`${path}/{id}`) || other.slice(`${path}/{id}`.length).includes('{')) continue;
      for (const [method, op] of Object.entries(otherItem as Json)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method) || !(op as Json).operationId) continue;
        links[(op as Json).operationId] = { operationId: (op as Json).operationId, parameters: { id: '$response.body#/data/id' } };
      }
    }
    if (Object.keys(links).length > 0) created.links = links;
  }
}

/** JSON Schema 2020-12 (OpenAPI 3.1) has no `nullable`: `{type: T, nullable: true}` → `{type: [T, 'null']}`. */
function toJsonSchema2020(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(toJsonSchema2020);
  if (!node || typeof node !== 'object') return;
  const o = node as Json;
  if (o.nullable === true) {
    delete o.nullable;
    if (o.$ref || o.allOf) {
      // A nullable reference (`{type: 'object', allOf: [{$ref}]}` from @nestjs/swagger): null must
      // not be checked against the referenced object schema, so `anyOf: [schema, {type: 'null'}]`,
      // with the annotations kept beside it.
      const { description, example, type: _type, ...schema } = o;
      for (const k of Object.keys(o)) delete o[k];
      if (description !== undefined) o.description = description;
      if (example !== undefined) o.example = example;
      const single = Array.isArray(schema.allOf) && schema.allOf.length === 1 && Object.keys(schema).length === 1 ? schema.allOf[0] : schema;
      o.anyOf = [single, { type: 'null' }];
    } else if (typeof o.type === 'string') o.type = [o.type, 'null'];
  } else if (o.nullable === false) delete o.nullable;
  for (const v of Object.values(o)) toJsonSchema2020(v);
}

/**
 * Completes the generated document so that every operation — including routes added later by
 * other controllers — documents the gateway-wide contract: bearer security, `X-Request-Id` and
 * (POST) `Idempotency-Key` request headers, the generic error responses with examples, the
 * `X-Request-Id`/`X-RateLimit-*` response headers, `Retry-After` on 429 and
 * `Idempotent-Replayed` on POST successes. Existing responses declared by controllers are kept.
 */
export function finalizeOpenApi(doc: OpenAPIObject): OpenAPIObject {
  const d = doc as Json;
  d.components ??= {};
  d.components.schemas ??= {};
  d.components.schemas.ErrorEnvelope = {
    type: 'object',
    required: ['success', 'error', 'request_id'],
    properties: {
      success: { type: 'boolean', const: false },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', enum: Object.values(ErrorCode) },
          message: { type: 'string', description: 'Human-readable, actionable; never a stack trace or an internal name.' },
        },
      },
      request_id: { type: 'string' },
    },
    example: errorExample(ErrorCode.VALIDATION_ERROR),
  };
  d.components.schemas.Pagination = {
    type: 'object',
    required: ['limit', 'offset', 'total'],
    properties: { limit: { type: 'integer', example: 50 }, offset: { type: 'integer', example: 0 }, total: { type: 'integer', example: 1 } },
  };
  d.components.headers = {
    'X-Request-Id': { description: 'The request id (the client’s when valid, else generated); equals `request_id` in the body.', schema: { type: 'string' } },
    'X-RateLimit-Limit': { description: 'Requests per minute allowed for the API key.', schema: { type: 'integer', example: 100 } },
    'X-RateLimit-Remaining': { description: 'Requests left in the current one-minute window.', schema: { type: 'integer', example: 99 } },
    'X-RateLimit-Reset': { description: 'Unix time (seconds) at which the current window ends.', schema: { type: 'integer', example: 1764547260 } },
    'Retry-After': { description: 'Seconds to wait before retrying (429 only).', schema: { type: 'integer', example: 42 } },
    'Idempotent-Replayed': {
      description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
      schema: { type: 'string', enum: ['true'] },
    },
  };
  d.components.parameters = {
    // Any value is accepted (none is refused): one that is not a valid id is replaced, so the
    // schema declares no length or pattern the server does not enforce (issue 29 defect 10).
    RequestId: {
      name: 'X-Request-Id',
      in: 'header',
      required: false,
      description:
        'Client request id, echoed back in the `X-Request-Id` header and `request_id`. Kept when it is 1–128 printable ASCII characters; any other value (longer, empty, other characters) is accepted and replaced by a generated UUID, never refused.',
      schema: { type: 'string' },
    },
    IdempotencyKey: {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes the POST safe to retry for 24 h: same key and body → the first response is replayed (`Idempotent-Replayed: true`). 1–255 printable ASCII characters, else 400.',
      // Printable ASCII (U+0020–U+007E), as idempotency.ts checks it.
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[ -~]+$' },
      example: 'create-project-2026-11-22-001',
    },
  };

  // The key is an opaque `kb_…` string: no bearerFormat (Nest's default would say JWT).
  for (const scheme of Object.values((d.components.securitySchemes ?? {}) as Json)) delete (scheme as Json).bearerFormat;

  for (const [path, item] of Object.entries(d.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const operation = op as Json;
      operation.responses ??= {};
      // Keyed operations; the public routes (PUBLIC_ROUTES: the health probes here) need no key.
      const api = !isPublicPath(path);
      operation.parameters ??= [];
      operation.parameters.push({ $ref: '#/components/parameters/RequestId' });
      const stream = operation[EVENT_STREAM_EXTENSION] as { name: string; status: number; description: string; events: Record<string, string> } | undefined;
      if (stream) {
        delete operation[EVENT_STREAM_EXTENSION];
        d.components.schemas[stream.name] = {
          description:
            'One Server-Sent Event: sent as `event: <event>`, then `data: <data as JSON>`, then a blank line. Comment lines (`: heartbeat`) may come between events. The `data` field is JSON text (`contentMediaType` application/json): parse it to get the object of its `contentSchema`.',
          // `data` is text on the wire (the SSE format): a string whose content is the JSON of the
          // event's model (JSON Schema 2020-12 contentMediaType/contentSchema), as a client (or
          // schemathesis) reading the stream sees it (issue 29 defect 10).
          oneOf: Object.entries(stream.events).map(([event, ref]) => ({
            type: 'object',
            title: event,
            required: ['event', 'data'],
            properties: {
              event: { type: 'string', const: event },
              data: { type: 'string', contentMediaType: 'application/json', contentSchema: { $ref: ref } },
            },
          })),
        };
        const r = (operation.responses[String(stream.status)] ??= { description: stream.description });
        if (stream.description) r.description = stream.description;
        r.content = { ...(r.content ?? {}), 'text/event-stream': { schema: { $ref: `#/components/schemas/${stream.name}` } } };
      }
      if (!api) {
        // Public routes: no key. The HTTP layer's 431 applies to every route.
        operation.security = [];
        operation.responses['431'] ??= {
          ...errorResponse([ErrorCode.VALIDATION_ERROR]),
          description: '`VALIDATION_ERROR`: the request line and headers are over 16 KiB (16,384 bytes), e.g. a query string that long',
        };
      }
      if (api) {
        operation.security = [{ bearer: [] }];
        if (method === 'post') operation.parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
        const hasInput = Boolean(operation.requestBody) || (operation.parameters as Json[]).some((p) => p.in === 'query' || p.in === 'path');
        const generic: Array<[number, ErrorCode[]]> = [
          [400, [ErrorCode.VALIDATION_ERROR]],
          [401, [ErrorCode.UNAUTHORIZED]],
          [402, [ErrorCode.QUOTA_EXCEEDED]],
          ...((path.includes('{') ? [[404, [ErrorCode.NOT_FOUND]]] : []) as Array<[number, ErrorCode[]]>),
          ...((method === 'post' ? [[409, [ErrorCode.CONFLICT]]] : []) as Array<[number, ErrorCode[]]>),
          ...((operation.requestBody ? [[413, [ErrorCode.PAYLOAD_TOO_LARGE]]] : []) as Array<[number, ErrorCode[]]>),
          [429, [ErrorCode.RATE_LIMITED]],
          // Answered by the HTTP layer before the request is admitted: no rate-limit headers.
          [431, [ErrorCode.VALIDATION_ERROR]],
          [500, [ErrorCode.INTERNAL_ERROR]],
          [503, [ErrorCode.SERVICE_UNAVAILABLE]],
          [504, [ErrorCode.TIMEOUT]],
        ];
        for (const [status, codes] of generic) {
          if (status === 400 && !hasInput && method !== 'post') continue;
          operation.responses[String(status)] ??=
            status === 431
              ? {
                  ...errorResponse(codes),
                  description: '`VALIDATION_ERROR`: the request line and headers are over 16 KiB (16,384 bytes), e.g. a query string that long',
                }
              : errorResponse(codes);
        }
      }
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        let r = response as Json;
        // An error response a controller declared with a description only (e.g. `@ApiResponse({ status: 404 })`)
        // gets the error envelope with an example of every code that HTTP status carries.
        const hasErrorExamples = Boolean(r.content?.['application/json']?.examples);
        if (Number(status) >= 400 && !hasErrorExamples) {
          const codes = (Object.keys(HTTP_STATUS_BY_CODE) as ErrorCode[]).filter((c) => String(HTTP_STATUS_BY_CODE[c]) === status);
          if (codes.length > 0) {
            const declared = typeof r.description === 'string' && r.description ? r.description : null;
            r = { ...r, ...errorResponse(codes), ...(declared ? { description: declared } : {}) };
            operation.responses[status] = r;
          }
        }
        r.headers = {
          'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
          ...(api && status !== '401' && status !== '431' ? RATE_HEADERS : {}),
          ...(r.headers ?? {}),
        };
        if (status === '429') r.headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
        if (api && method === 'post' && status.startsWith('2')) r.headers['Idempotent-Replayed'] = { $ref: '#/components/headers/Idempotent-Replayed' };
      }
    }
  }
  addCreationLinks(d);
  toJsonSchema2020(d.components.schemas);
  toJsonSchema2020(d.paths);
  return doc;
}
