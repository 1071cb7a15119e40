import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_OFFSET_MAX } from '@kb/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { Paginated } from './envelope';
import { QueryInt } from './validation';

/**
 * `limit` (1–200, default 50) and `offset` (0 to 2^31 − 1, default 0) of list endpoints
 * (service-api.md §1). Only plain decimal digits are read as numbers (QueryInt).
 */
export class PaginationQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT })
  @IsOptional()
  @QueryInt()
  @IsInt({ message: 'limit must be an integer' })
  @Min(1, { message: 'limit must be at least 1' })
  @Max(PAGE_LIMIT_MAX, { message: `limit must be at most ${PAGE_LIMIT_MAX}` })
  limit: number = PAGE_LIMIT_DEFAULT;

  @ApiPropertyOptional({ minimum: 0, maximum: PAGE_OFFSET_MAX, default: 0 })
  @IsOptional()
  @QueryInt()
  @IsInt({ message: 'offset must be an integer' })
  @Min(0, { message: 'offset must be 0 or more' })
  @Max(PAGE_OFFSET_MAX, { message: `offset must be at most ${PAGE_OFFSET_MAX}` })
  offset: number = 0;
}

/**
 * The `page` of a gRPC list request (commonV1 `PageRequest`): the query's `limit` and `offset`.
 */
export function pageRequest(q: PaginationQuery): { limit: number; offset: number } {
  return { limit: q.limit, offset: q.offset };
}

/**
 * The page a list endpoint answers: the presented `items` with the query's `limit` and `offset`
 * and the list's `total` (the envelope's `pagination`, service-api.md §1).
 */
export function pageOf<T>(q: PaginationQuery, items: T[], total: number): Paginated<T> {
  return new Paginated(items, { ...pageRequest(q), total });
}
