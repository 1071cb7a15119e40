import { INestApplicationContext, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

type Json = Record<string, any>;
type Class = new (...args: never[]) => unknown;

/** The DTO classes one operation validates: its JSON body and its query string (either may be absent). */
export interface OperationInputs {
  body?: Class;
  query?: Class;
  /** Path parameters validated as UUIDs (UuidParamPipe), by name. */
  uuidParams: string[];
  /** Path parameters validated as 1-based page numbers (PageNumberParamPipe), by name. */
  pageParams: string[];
}

/**
 * The input classes of every route of the app, keyed `"<method> <OpenAPI path>"` (`"post /api/v2/projects"`),
 * read from the metadata Nest routes and validates by: the controller and method paths, the
 * `@Body()`/`@Query()` parameters and their TypeScript types (`design:paramtypes`). Works in
 * Nest's preview mode (no controller instantiated).
 */
export function operationInputs(app: INestApplicationContext): Map<string, OperationInputs> {
  const out = new Map<string, OperationInputs>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Class | undefined;
      if (!controller) continue;
      const base = [Reflect.getMetadata(PATH_METADATA, controller) ?? ''].flat()[0] as string;
      const proto = controller.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const sub = [Reflect.getMetadata(PATH_METADATA, handler) ?? ''].flat()[0] as string;
        const path = `/${[base, sub]
          .map((p) => p.replace(/^\/+|\/+$/g, ''))
          .filter(Boolean)
          .join('/')}`.replace(/:([A-Za-z_]\w*)/g, '{$1}');
        const types: unknown[] = Reflect.getMetadata('design:paramtypes', proto, name) ?? [];
        const args: Record<string, { index: number; data?: unknown; pipes?: unknown[] }> = Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {};
        const inputs: OperationInputs = { uuidParams: [], pageParams: [] };
        for (const [key, arg] of Object.entries(args)) {
          const kind = Number(key.split(':')[0]);
          const type = types[arg.index] as Class | undefined;
          if (kind === RouteParamtypes.BODY && arg.data === undefined && isDto(type)) inputs.body = type;
          if (kind === RouteParamtypes.QUERY && arg.data === undefined && isDto(type)) inputs.query = type;
          const pipe = (n: string) => (arg.pipes ?? []).some((p) => (p as { name?: string })?.name === n);
          if (kind === RouteParamtypes.PARAM && typeof arg.data === 'string' && pipe('UuidParamPipe')) inputs.uuidParams.push(arg.data);
          if (kind === RouteParamtypes.PARAM && typeof arg.data === 'string' && pipe('PageNumberParamPipe')) inputs.pageParams.push(arg.data);
        }
        out.set(`${RequestMethod[method].toLowerCase()} ${path}`, inputs);
      }
    }
  }
  return out;
}

function isDto(type: unknown): type is Class {
  return typeof type === 'function' && ![Object, String, Number, Boolean, Array].includes(type as never);
}

/** class-validator's rules of `target` (inherited ones included), grouped by property, in declaration order. */
export function validationRules(target: Class): Map<string, ValidationMetadata[]> {
  const rules = new Map<string, ValidationMetadata[]>();
  for (const m of getMetadataStorage().getTargetValidationMetadatas(target, '', true, false)) {
    rules.set(m.propertyName, [...(rules.get(m.propertyName) ?? []), m]);
  }
  return rules;
}

/** Whether a property may be omitted (`@IsOptional()` or a `@ValidateIf` condition). */
export function isOptionalProperty(rules: ValidationMetadata[]): boolean {
  return rules.some((r) => r.type === 'conditionalValidation');
}

/**
 * Writes the constraints a property's class-validator rules enforce into its JSON Schema, so the
 * document states exactly what validation accepts: `isLength`/`minLength`/`maxLength` →
 * `minLength`/`maxLength`, `min`/`max` → `minimum`/`maximum`, `isIn` → `enum`, `isUuid` →
 * `format: uuid`, `arrayMinSize`/`arrayMaxSize` → `minItems`/`maxItems`, `isInt`/`isBoolean`/
 * `isString`/`isArray`/`isObject` → `type`. Rules with `each: true` apply to `items`.
 * A `{ $ref }` or `allOf` property (a nested DTO) is left as is.
 */
export function applyRules(schema: Json, rules: ValidationMetadata[]): void {
  for (const r of rules) {
    const each = Boolean(r.each);
    const target = each ? (schema.items ??= {}) : schema;
    if (target.$ref || target.allOf) continue;
    const [a, b] = (r.constraints ?? []) as [unknown, unknown];
    switch (r.name) {
      case 'isLength':
        target.minLength = a;
        if (typeof b === 'number') target.maxLength = b;
        else delete target.maxLength;
        break;
      case 'charLength':
        // CharLength (validation.ts): code points, as JSON Schema's minLength/maxLength count them.
        if (typeof a === 'number' && a > 0) target.minLength = a;
        if (typeof b === 'number') target.maxLength = b;
        break;
      case 'minLength':
        target.minLength = a;
        break;
      case 'maxLength':
        target.maxLength = a;
        break;
      case 'min':
        target.minimum = a;
        break;
      case 'max':
        target.maximum = a;
        break;
      case 'isIn':
        target.enum = [...(a as unknown[])];
        break;
      case 'isUuid':
        target.format = 'uuid';
        if (!target.type) target.type = 'string';
        break;
      case 'arrayMinSize':
        schema.minItems = a;
        break;
      case 'arrayMaxSize':
        schema.maxItems = a;
        break;
      case 'isArray':
        setType(schema, 'array');
        break;
      default: {
        const type = JSON_TYPE_OF_RULE.get(r.name ?? '');
        if (type) setType(target, type);
      }
    }
  }
}

/** The JSON type a class-validator type rule (by its name) enforces on a value. */
const JSON_TYPE_OF_RULE: ReadonlyMap<string, string> = new Map([
  ['isInt', 'integer'],
  ['isBoolean', 'boolean'],
  ['isString', 'string'],
  ['isObject', 'object'],
]);

/** Sets the JSON type, keeping `null` when the schema allowed it (`nullable`, or a type union). */
function setType(schema: Json, type: string): void {
  const nullable = schema.nullable === true || (Array.isArray(schema.type) && schema.type.includes('null'));
  schema.type = nullable ? (schema.nullable === true ? type : [type, 'null']) : type;
}

/**
 * The messages validation answers for a DTO's fields, first rule of each field first: used as the
 * 400 examples of the operations that take it (each field its own example).
 */
export function validationMessages(target: Class): Array<{ field: string; message: string }> {
  const out: Array<{ field: string; message: string }> = [];
  for (const [field, rules] of validationRules(target)) {
    const r = rules.find((x) => typeof x.message === 'string' && x.message);
    if (r) out.push({ field, message: r.message as string });
  }
  return out;
}
