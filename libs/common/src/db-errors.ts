import { AppError, ErrorCode } from './errors';

/**
 * Socket error codes of a PostgreSQL connection that could not be opened or was lost (Node's
 * `net` errors, as node-postgres passes them on).
 */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * SQLSTATEs meaning "the database is not serving now" (PostgreSQL, Appendix A "Error Codes"):
 * class 08 connection exception, 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up or in recovery), 53300 too_many_connections.
 */
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|53300)$/;

/**
 * Messages node-postgres (pg, pg-pool) raises without a code when a connection ends under it or a
 * pool cannot hand one out in time.
 */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|the database system is (?:shutting down|starting up|in recovery mode)/i;

/**
 * Whether `error` (as thrown by TypeORM or node-postgres, possibly wrapped: TypeORM's
 * `QueryFailedError.driverError`, an `AggregateError` of the connection attempts to each address,
 * an `Error.cause`) says PostgreSQL cannot be reached or is shutting down, rather than that a
 * query is wrong.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (CONNECTION_ERROR_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.test(e.code))) return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(e.driverError, depth + 1) || isDatabaseUnavailable(e.cause, depth + 1);
}

/** What a client is told when PostgreSQL is unreachable (503 SERVICE_UNAVAILABLE at the gateway). */
export const DATABASE_UNAVAILABLE_MESSAGE = 'The database is unavailable. Retry shortly.';

/**
 * The AppError a client sees for an unexpected `error`: SERVICE_UNAVAILABLE (gRPC UNAVAILABLE, HTTP
 * 503) when the database is unreachable ({@link isDatabaseUnavailable}), else null (the caller
 * keeps its own mapping, usually INTERNAL_ERROR).
 */
export function databaseUnavailableError(error: unknown): AppError | null {
  return isDatabaseUnavailable(error) ? new AppError(ErrorCode.SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE_MESSAGE) : null;
}
