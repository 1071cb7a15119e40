import 'reflect-metadata';
import { DynamicModule, Module, Type } from '@nestjs/common';
import { PARAMTYPES_METADATA, SELF_DECLARED_DEPS_METADATA } from '@nestjs/common/constants';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { GATEWAY_CONTROLLERS } from './app.module';
import { buildOpenApiDocument } from './common/openapi';
import { WEBHOOK_EVENT_MODELS } from './webhooks/webhook-events';

/**
 * The injection tokens the controllers' constructors ask for (`@Inject(TOKEN)` or a class type),
 * read from the metadata Nest itself resolves them by.
 */
function injectedTokens(controllers: Array<Type<unknown>>): unknown[] {
  const tokens = new Set<unknown>();
  for (const c of controllers) {
    const types = (Reflect.getMetadata(PARAMTYPES_METADATA, c) as unknown[] | undefined) ?? [];
    const explicit = (Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, c) as Array<{ index: number; param: unknown }> | undefined) ?? [];
    types.forEach((t, i) => tokens.add(explicit.find((d) => d.index === i)?.param ?? t));
  }
  return [...tokens].filter((t) => t !== undefined && t !== Object);
}

/**
 * The gateway's controllers with placeholder values for their dependencies: Nest's preview mode
 * checks that every dependency is declared but never instantiates a controller, so the values are
 * never read; only routes and decorators are.
 */
@Module({})
class ReferenceModule {
  static create(): DynamicModule {
    return {
      module: ReferenceModule,
      controllers: GATEWAY_CONTROLLERS,
      providers: injectedTokens(GATEWAY_CONTROLLERS).map((token) => ({ provide: token as string, useValue: null })),
    };
  }
}

/**
 * Builds the OpenAPI 3.1 document the gateway serves at `/docs/openapi.json`, without any backing
 * service: Nest's preview mode scans the module graph (routes, parameters, decorators) without
 * instantiating controllers or providers, so no database, NATS or gRPC connection is made.
 * `npm run openapi` writes it to `dist/openapi.json` (and `npm run openapi:update` to the committed
 * COMMITTED_REFERENCE too); the e2e suite checks it equals the served one.
 * @returns the finalized document (see finalizeOpenApi).
 */
export async function buildGatewayReference(): Promise<OpenAPIObject> {
  const app = await NestFactory.create<NestFastifyApplication>(ReferenceModule.create(), new FastifyAdapter(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    return buildOpenApiDocument(app, WEBHOOK_EVENT_MODELS);
  } finally {
    await app.close();
  }
}

/**
 * Where the document is committed, relative to the repository root: API changes show in a diff
 * there, and a unit test (reference.spec.ts) fails while it differs from what the code builds.
 * Refreshed by `npm run openapi:update`.
 */
export const COMMITTED_REFERENCE = 'openapi/openapi.json';

/**
 * The document as text, the way it is written to disk: JSON indented by two spaces, keys in the
 * order the builder makes them (deterministic: the order of controllers, routes, decorators and
 * fields in the code, so a diff shows an API change where it was made), and a final newline.
 */
export function serializeReference(doc: OpenAPIObject): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
