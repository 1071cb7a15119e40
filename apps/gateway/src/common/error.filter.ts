import { AppError, databaseUnavailableError, ErrorCode, HTTP_STATUS_BY_CODE, type Logger } from '@kb/common';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorEnvelope } from './envelope';

const CODE_BY_HTTP_STATUS: Record<number, ErrorCode> = {
  400: ErrorCode.VALIDATION_ERROR,
  401: ErrorCode.UNAUTHORIZED,
  402: ErrorCode.QUOTA_EXCEEDED,
  403: ErrorCode.FORBIDDEN,
  404: ErrorCode.NOT_FOUND,
  405: ErrorCode.NOT_FOUND,
  409: ErrorCode.CONFLICT,
  413: ErrorCode.PAYLOAD_TOO_LARGE,
  415: ErrorCode.VALIDATION_ERROR,
  429: ErrorCode.RATE_LIMITED,
  503: ErrorCode.SERVICE_UNAVAILABLE,
  504: ErrorCode.TIMEOUT,
};

/**
 * Maps any error to an HTTP status and the error envelope: the single place where errors become
 * HTTP. AppError keeps its code; a database that cannot be reached (`isDatabaseUnavailable`) is
 * 503 SERVICE_UNAVAILABLE (logged); framework errors (unknown route, body parsing, body too large)
 * map by status; anything else is a 500 with a generic message (details only in the log).
 */
export function toHttpError(error: unknown, method: string, url: string): { status: number; code: string; message: string; unexpected: boolean } {
  // The gateway's own database (keys, usage, idempotency) unreachable: 503, as a service's would be.
  const unavailable = error instanceof AppError ? null : databaseUnavailableError(error);
  if (unavailable) return { status: 503, code: unavailable.code, message: unavailable.message, unexpected: true };
  if (error instanceof AppError) {
    // An INTERNAL_ERROR relayed from a service is logged here too (with the request id), so every
    // 500 the gateway sends leaves an error line in its log (the service logged its own cause).
    return { status: HTTP_STATUS_BY_CODE[error.code], code: error.code, message: error.message, unexpected: error.code === ErrorCode.INTERNAL_ERROR };
  }
  const status =
    error instanceof HttpException
      ? error.getStatus()
      : typeof (error as { statusCode?: unknown })?.statusCode === 'number'
        ? (error as { statusCode: number }).statusCode
        : 500;
  const code = CODE_BY_HTTP_STATUS[status];
  if (!code || status >= 500) {
    return { status: 500, code: ErrorCode.INTERNAL_ERROR, message: AppError.internal().message, unexpected: true };
  }
  const fastifyCode = (error as { code?: string })?.code ?? '';
  let message: string;
  if (status === 404) message = `Route ${method} ${url.split('?')[0]} not found.`;
  else if (status === 413) message = 'The request body is larger than allowed.';
  else if (status === 415) message = 'Unsupported Content-Type: send application/json.';
  else if (fastifyCode.startsWith('FST_ERR_CTP') || error instanceof SyntaxError) message = 'The request body is not valid JSON.';
  else if (error instanceof HttpException) {
    // Nest's message: a string, or the list of a validation pipe's messages (joined as String() joins them).
    const given = (error.getResponse() as { message?: unknown })?.message;
    message = typeof given === 'string' ? given : Array.isArray(given) ? given.join(',') : error.message;
  } else message = 'Invalid request.';
  // 405 → 404 (no such route for the method); 415 → 400 (decisions.md: a body that is not JSON is a VALIDATION_ERROR).
  return { status: status === 405 ? 404 : status === 415 ? 400 : status, code, message, unexpected: false };
}

/** Nest exception filter using toHttpError. */
@Catch()
export class ErrorEnvelopeFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const mapped = toHttpError(error, request.method, request.url);
    if (mapped.unexpected) this.logger.error({ err: error, request_id: request.id }, 'unexpected error');
    if (reply.sent) return;
    void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, String(request.id)));
  }
}
