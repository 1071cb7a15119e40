import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';

/**
 * Error codes of the public API (service-api.md §7 and decisions.md "More error codes").
 * The same enum travels between services, so a code raised deep in a service reaches the HTTP
 * client unchanged.
 */
export enum ErrorCode {
  VALIDATION_ERROR = 'VALIDATION_ERROR',
  UNAUTHORIZED = 'UNAUTHORIZED',
  QUOTA_EXCEEDED = 'QUOTA_EXCEEDED',
  FORBIDDEN = 'FORBIDDEN',
  AGENT_NOT_ENABLED = 'AGENT_NOT_ENABLED',
  NOT_FOUND = 'NOT_FOUND',
  /** An HTTP method the path does not serve (405 with `Allow`): raised by the gateway only (issue 29). */
  METHOD_NOT_ALLOWED = 'METHOD_NOT_ALLOWED',
  CONFLICT = 'CONFLICT',
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  RATE_LIMITED = 'RATE_LIMITED',
  INTERNAL_ERROR = 'INTERNAL_ERROR',
  SERVICE_UNAVAILABLE = 'SERVICE_UNAVAILABLE',
  TIMEOUT = 'TIMEOUT',
}

/** HTTP status for each code: the single table the gateway uses. */
export const HTTP_STATUS_BY_CODE: Record<ErrorCode, number> = {
  [ErrorCode.VALIDATION_ERROR]: 400,
  [ErrorCode.UNAUTHORIZED]: 401,
  [ErrorCode.QUOTA_EXCEEDED]: 402,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.AGENT_NOT_ENABLED]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.METHOD_NOT_ALLOWED]: 405,
  [ErrorCode.CONFLICT]: 409,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.RATE_LIMITED]: 429,
  [ErrorCode.INTERNAL_ERROR]: 500,
  [ErrorCode.SERVICE_UNAVAILABLE]: 503,
  [ErrorCode.TIMEOUT]: 504,
};

/** gRPC status for each code, used when a service answers with an AppError. */
const GRPC_STATUS_BY_CODE: Record<ErrorCode, GrpcStatus> = {
  [ErrorCode.VALIDATION_ERROR]: GrpcStatus.INVALID_ARGUMENT,
  [ErrorCode.UNAUTHORIZED]: GrpcStatus.UNAUTHENTICATED,
  [ErrorCode.QUOTA_EXCEEDED]: GrpcStatus.RESOURCE_EXHAUSTED,
  [ErrorCode.FORBIDDEN]: GrpcStatus.PERMISSION_DENIED,
  [ErrorCode.AGENT_NOT_ENABLED]: GrpcStatus.PERMISSION_DENIED,
  [ErrorCode.NOT_FOUND]: GrpcStatus.NOT_FOUND,
  [ErrorCode.METHOD_NOT_ALLOWED]: GrpcStatus.UNIMPLEMENTED,
  [ErrorCode.CONFLICT]: GrpcStatus.ABORTED,
  [ErrorCode.PAYLOAD_TOO_LARGE]: GrpcStatus.OUT_OF_RANGE,
  [ErrorCode.RATE_LIMITED]: GrpcStatus.RESOURCE_EXHAUSTED,
  [ErrorCode.INTERNAL_ERROR]: GrpcStatus.INTERNAL,
  [ErrorCode.SERVICE_UNAVAILABLE]: GrpcStatus.UNAVAILABLE,
  [ErrorCode.TIMEOUT]: GrpcStatus.DEADLINE_EXCEEDED,
};

/** Trailer key carrying the exact ErrorCode across a gRPC hop. */
export const ERROR_CODE_METADATA_KEY = 'x-kb-error-code';

/**
 * Base of a layer's own error type (the storage library's StorageError, the chunk store's ChunkStoreError): a
 * machine-readable `code` from the layer's list, which its caller maps (to an {@link AppError}, a gRPC status),
 * a message for logs, and the underlying error as `cause` when there is one. Subclasses set `name`.
 */
export class CodedError<C extends string> extends Error {
  constructor(
    readonly code: C,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The one error type that may reach a client. `message` is shown to API users as is: it must be
 * actionable and must not contain stack traces or internal names.
 */
export class AppError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AppError';
  }

  static validation(message: string): AppError {
    return new AppError(ErrorCode.VALIDATION_ERROR, message);
  }
  static notFound(message: string): AppError {
    return new AppError(ErrorCode.NOT_FOUND, message);
  }
  static conflict(message: string): AppError {
    return new AppError(ErrorCode.CONFLICT, message);
  }
  static forbidden(message: string): AppError {
    return new AppError(ErrorCode.FORBIDDEN, message);
  }
  static internal(message = 'An internal error occurred. Retry later; if it persists, contact support with the request id.'): AppError {
    return new AppError(ErrorCode.INTERNAL_ERROR, message);
  }
}

export interface GrpcErrorShape {
  code: GrpcStatus;
  details: string;
  metadata: Metadata;
}

/** Converts an AppError into the error object a grpc-js handler passes to its callback. */
export function toGrpcError(error: AppError): GrpcErrorShape {
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_METADATA_KEY, error.code);
  return { code: GRPC_STATUS_BY_CODE[error.code], details: error.message, metadata };
}

/**
 * Converts a grpc-js client error into an AppError. Our own services send the exact code in the
 * trailer; transport failures map to SERVICE_UNAVAILABLE / TIMEOUT with a generic message.
 */
export function fromGrpcError(error: { code?: number; details?: string; metadata?: Metadata }): AppError {
  const sent = error.metadata?.get(ERROR_CODE_METADATA_KEY)?.[0];
  if (typeof sent === 'string' && sent in ErrorCode) {
    return new AppError(sent as ErrorCode, error.details ?? 'Request failed.');
  }
  switch (error.code) {
    case GrpcStatus.UNAVAILABLE:
      return new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'A backing service is unavailable. Retry shortly.');
    case GrpcStatus.DEADLINE_EXCEEDED:
      return new AppError(ErrorCode.TIMEOUT, 'The request took too long to complete. Retry later.');
    case GrpcStatus.CANCELLED:
      return new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The request was cancelled before it completed.');
    default:
      return AppError.internal();
  }
}
