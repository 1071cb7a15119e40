import { AppError, charLengthWithin, isUuid, MAX_IDS_PER_REQUEST } from '@kb/common';
import { applyDecorators, ArgumentMetadata, Injectable, PipeTransform, ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsOptional, IsString, IsUUID, ValidateBy, ValidationOptions } from 'class-validator';
import { Transform } from 'class-transformer';
import { metadataProblem } from './body-shape';

function flatten(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {});
    return [...own.map((m) => (m.startsWith(e.property) ? m.replace(e.property, path) : `${path}: ${m}`)), ...flatten(e.children ?? [], path)];
  });
}

/**
 * The first query parameter given as an array, or null: repeated (`limit=1&limit=2`, which the
 * query parser reads as an array) or in bracket form (`limit[]=1`, `limit[0]=1`: a key the DTO does
 * not know, which whitelisting would otherwise drop silently, leaving the default). Every query
 * parameter of the API is a single value.
 */
export function arrayQueryParameter(query: unknown): string | null {
  if (query === null || typeof query !== 'object') return null;
  for (const [key, value] of Object.entries(query as Record<string, unknown>)) {
    if (Array.isArray(value)) return key;
    const bracket = /^([^[\]]*)\[/.exec(key);
    if (bracket) return bracket[1] || key;
  }
  return null;
}

/**
 * The gateway's ValidationPipe: before the DTO rules, a query parameter given as an array
 * (`limit[]=1`, `limit=1&limit=2`) → 400 VALIDATION_ERROR naming it; after them, a body text or
 * key holding NUL or a lone surrogate ({@link invalidTextIn}) → 400 naming it. That check reads the
 * validated body, whose unknown keys are already dropped (`whitelist`): a key the API does not read
 * is dropped whatever it holds, never refused for its content (issue 29 defect 10).
 */
class GatewayValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'query') {
      const name = metadata.data ? (Array.isArray(value) ? metadata.data : null) : arrayQueryParameter(value);
      if (name !== null) throw AppError.validation(`${name} must be given once, as a single value (not an array such as ${name}[]=… or a repeated ${name}=…).`);
    }
    const result: unknown = await super.transform(value, metadata);
    if (metadata.type === 'body') {
      const badText = invalidTextIn(result);
      if (badText !== null) throw AppError.validation(badText);
    }
    return result;
  }
}

/**
 * Global validation: class-validator DTOs, unknown properties stripped, failures reported as 400
 * VALIDATION_ERROR naming each field. `transform: true` builds the DTO instances, but without
 * implicit conversion: a body field must already have its JSON type (`"top_k": "7"` or `true` for
 * an integer → 400); only query strings are read as numbers, explicitly (QueryInt). A query
 * parameter given as an array → 400 (GatewayValidationPipe).
 */
export function createValidationPipe(): ValidationPipe {
  return new GatewayValidationPipe({
    whitelist: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    forbidUnknownValues: false,
    exceptionFactory: (errors) => AppError.validation(flatten(errors).join('; ') || 'Invalid request.'),
  });
}

/**
 * Every item of an array of nested DTOs (`requirements`, `messages`) must be a JSON object:
 * `@ValidateNested` alone lets an item that is itself an array (`[[]]`) through (it validates the
 * inner array's items, none), and the handler then reads `undefined` fields. The message names
 * the first bad item: `requirements[0] must be a JSON object`. Use next to `@ValidateNested({ each: true })`.
 */
export function EachItemAnObject(field: string): PropertyDecorator {
  const isObject = (item: unknown) => item !== null && typeof item === 'object' && !Array.isArray(item);
  return ValidateBy({
    name: 'eachItemAnObject',
    validator: {
      validate: (value: unknown) => !Array.isArray(value) || value.every(isObject),
      defaultMessage: (args) => {
        const index = Array.isArray(args?.value) ? args.value.findIndex((item: unknown) => !isObject(item)) : 0;
        return `${field}[${index}] must be a JSON object`;
      },
    },
  });
}

/** Path parameter pipe: a UUID, else 400 VALIDATION_ERROR. */
@Injectable()
export class UuidParamPipe implements PipeTransform<string, string> {
  transform(value: string, metadata: ArgumentMetadata): string {
    if (!isUuid(value)) throw AppError.validation(`${metadata.data ?? 'id'} must be a UUID.`);
    return value;
  }
}

/** Largest page number a path accepts (the gRPC field is a 32-bit integer). */
export const MAX_PAGE_NUMBER = 2147483647;

/**
 * A 1-based page number in the path (`GET …/pages/{n}`): decimal digits only, no sign, no leading
 * zero, at most {@link MAX_PAGE_NUMBER}; anything else → 400 VALIDATION_ERROR naming the parameter.
 * Returns the digits unchanged: declare the parameter as `string` (a `number` parameter would let
 * the global ValidationPipe convert "01" or " 1" to 1 before this pipe sees it) and read it with
 * `Number(n)`. Documented in OpenAPI as `{ type: integer, minimum: 1, maximum: MAX_PAGE_NUMBER }`.
 */
@Injectable()
export class PageNumberParamPipe implements PipeTransform<string, string> {
  transform(value: string, metadata: ArgumentMetadata): string {
    const n = typeof value === 'string' && /^[1-9]\d{0,9}$/.test(value) ? Number(value) : NaN;
    if (!(n >= 1 && n <= MAX_PAGE_NUMBER)) throw AppError.validation(`${metadata.data ?? 'n'} must be a page number: an integer from 1 to ${MAX_PAGE_NUMBER}.`);
    return value;
  }
}

/**
 * An optional field (body or query) holding one UUID (`project_id`, `replaces`): the OpenAPI
 * property (`format: uuid` plus `property`: example, description, nullable…) and the
 * class-validator rules, with the message `<field> must be a UUID`. The same as the stack
 * `@ApiPropertyOptional({ format: 'uuid', …property }) @IsOptional() @IsUUID(…)`, applied in that
 * stack's (bottom-up) order.
 */
export function OptionalUuid(field: string, property: ApiPropertyOptions = {}): PropertyDecorator {
  return applyDecorators(IsUUID('all', { message: `${field} must be a UUID` }), IsOptional(), ApiPropertyOptional({ format: 'uuid', ...property }));
}

/**
 * An optional body field holding at most MAX_IDS_PER_REQUEST (100) UUIDs (`document_ids`, `handbook_ids`): the OpenAPI
 * property and the class-validator rules, with messages naming `field`.
 * @param description OpenAPI description of the field, if any.
 */
export function OptionalUuidList(field: string, description?: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: [String],
      format: 'uuid',
      maxItems: MAX_IDS_PER_REQUEST,
      example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'],
      ...(description ? { description } : {}),
    }),
    IsOptional(),
    IsArray({ message: `${field} must be an array of UUIDs` }),
    ArrayMaxSize(MAX_IDS_PER_REQUEST, { message: `${field} must have at most ${MAX_IDS_PER_REQUEST} items` }),
    IsUUID('all', { each: true, message: `${field} must contain only UUIDs` }),
  );
}

/**
 * OpenAPI pattern of a text field the service trims and refuses when blank (project and run
 * names, requirement texts): at least one character that is not whitespace, and no NUL.
 */
export const NON_BLANK_PATTERN = '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$';

/**
 * A text body field of 1 to `max` characters (CharLength) that the service trims and refuses when
 * blank (names, requirement texts, questions): the OpenAPI property (`minLength: 1`, `maxLength`,
 * `pattern`, then `example` and `description`) and the class-validator rules, with messages naming
 * `field` (`name must be a string`, `name must be 1 to 500 characters`). The rules are registered
 * in the order of the decorator stack they replace (`@ApiProperty @IsString @CharLength`, applied
 * bottom-up), so the document's 400 example stays the length message.
 * @param options.optional the field may be omitted (`@IsOptional`, `ApiPropertyOptional`).
 * @param options.pattern OpenAPI pattern; default {@link NON_BLANK_PATTERN}.
 */
export function NonBlankText(
  field: string,
  max: number,
  options: { example: string; description: string; optional?: boolean; pattern?: string },
): PropertyDecorator {
  const property = { minLength: 1, maxLength: max, pattern: options.pattern ?? NON_BLANK_PATTERN, example: options.example, description: options.description };
  return applyDecorators(
    CharLength(1, max, { message: `${field} must be 1 to ${max} characters` }),
    IsString({ message: `${field} must be a string` }),
    ...(options.optional ? [IsOptional(), ApiPropertyOptional(property)] : [ApiProperty(property)]),
  );
}

/**
 * Query-string integer: only plain decimal digits (`"007"` → 7) become a number. Anything else
 * (`"1e2"`, `"0x10"`, `" 5"`, `"+5"`, `"5.0"`, `""`) stays a string, so `@IsInt` refuses it with
 * 400 instead of `Number()` reading it loosely.
 */
export function QueryInt(): PropertyDecorator {
  return Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,20}$/.test(value) ? Number(value) : value));
}

/**
 * The first text in a parsed JSON body that PostgreSQL and protobuf cannot carry faithfully: a
 * NUL character (U+0000; PostgreSQL refuses it in text and JSONB) or a lone UTF-16 surrogate (not
 * encodable as UTF-8; it would be silently replaced by U+FFFD). Object keys are checked too.
 * Iterative (no recursion), depth already bounded by the caller.
 * @returns a 400 message naming the field (`requirements[0].text`), or null when every string is fine.
 */
export function invalidTextIn(body: unknown): string | null {
  const stack: Array<[unknown, string]> = [[body, '']];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return `${path || 'body'} ${problem}`;
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
      continue;
    }
    const entries = Object.entries(value as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i];
      const childPath = path ? `${path}.${key}` : key;
      const problem = textProblem(key);
      if (problem) return `${path ? `${path}: a key` : 'a key'} ${problem}`;
      stack.push([child, childPath]);
    }
  }
  return null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character (U+0000), which text fields cannot hold.';
  if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate: it is not valid Unicode text.';
  return null;
}

/**
 * A text field of `min` to `max` characters, counted as Unicode code points (`charCount` of
 * @kb/common: the rule of service-api.md §8 and of every service's own check). Replaces
 * class-validator's `Length`/`MaxLength`, whose validator.js count skips variation selectors
 * (U+FE0F), so that a text the gateway accepts is never refused by a service, nor the reverse.
 * A value that is not a string passes (pair with `IsString`). `options.each` checks every item of an array.
 */
export function CharLength(min: number, max: number, options: ValidationOptions & { message: string }): PropertyDecorator {
  return ValidateBy(
    {
      name: 'charLength',
      constraints: [min, max],
      validator: { validate: (value: unknown) => typeof value !== 'string' || charLengthWithin(value, min, max) },
    },
    options,
  );
}

/**
 * A free-form JSON object field (`requirements[].metadata`) within the limits of body-shape.ts:
 * at most METADATA_MAX_MEMBERS keys and array items in all, METADATA_MAX_DEPTH levels and
 * METADATA_MAX_BYTES as JSON; the message names the field's path (`requirements.3.metadata must
 * have at most 64 keys…`). Pair with `IsObject`.
 */
export function FreeFormObject(field: string): PropertyDecorator {
  return ValidateBy({
    name: 'freeFormObject',
    validator: {
      validate: (value: unknown) => metadataProblem(value) === null,
      defaultMessage: (args) => `${field} ${metadataProblem(args?.value) ?? 'is not valid'}`,
    },
  });
}
