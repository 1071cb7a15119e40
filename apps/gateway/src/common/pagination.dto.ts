import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { MAX_OFFSET, QueryInt } from './validation';

/**
 * `limit` (1–200, default 50) and `offset` (0 to 2^31 − 1, default 0) of list endpoints
 * (service-api.md §1). Only plain decimal digits are read as numbers (QueryInt).
 */
export class PaginationQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 })
  @IsOptional()
  @QueryInt()
  @IsInt({ message: 'limit must be an integer' })
  @Min(1, { message: 'limit must be at least 1' })
  @Max(200, { message: 'limit must be at most 200' })
  limit: number = 50;

  @ApiPropertyOptional({ minimum: 0, maximum: MAX_OFFSET, default: 0 })
  @IsOptional()
  @QueryInt()
  @IsInt({ message: 'offset must be an integer' })
  @Min(0, { message: 'offset must be 0 or more' })
  @Max(MAX_OFFSET, { message: `offset must be at most ${MAX_OFFSET}` })
  offset: number = 0;
}
