import { AppError, isUuid } from '@kb/common';
import { applyDecorators, ArgumentMetadata, Injectable, PipeTransform, ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsOptional, IsUUID } from 'class-validator';

function flatten(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {});
    return [...own.map((m) => (m.startsWith(e.property) ? m.replace(e.property, path) : `${path}: ${m}`)), ...flatten(e.children ?? [], path)];
  });
}

/**
 * Global validation: class-validator DTOs, unknown properties stripped, values transformed
 * (query strings to numbers), failures reported as 400 VALIDATION_ERROR naming each field.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    transform: true,
    forbidUnknownValues: false,
    exceptionFactory: (errors) => AppError.validation(flatten(errors).join('; ') || 'Invalid request.'),
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

/**
 * An optional body field holding at most 100 UUIDs (`document_ids`, `handbook_ids`): the OpenAPI
 * property and the class-validator rules, with messages naming `field`.
 * @param description OpenAPI description of the field, if any.
 */
export function OptionalUuidList(field: string, description?: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: [String], maxItems: 100, ...(description ? { description } : {}) }),
    IsOptional(),
    IsArray({ message: `${field} must be an array of UUIDs` }),
    ArrayMaxSize(100, { message: `${field} must have at most 100 items` }),
    IsUUID('all', { each: true, message: `${field} must contain only UUIDs` }),
  );
}
