/**
 * The gateway's own error type. Every layer below services/ throws this; services/ maps it to a
 * ConnectError in one place, and the REST bridge maps that to an HTTP status and the /api envelope. The
 * status of an error and the metadata headers that carry its type and status across an RPC live here, so
 * services/ and server/ share them without importing each other.
 */

/** Stable, protocol-neutral error codes (the Connect code names, snake_case). */
export type GatewayErrorCode =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "permission_denied"
  | "unauthenticated"
  | "resource_exhausted"
  | "unimplemented"
  | "unavailable"
  | "deadline_exceeded"
  | "internal";

/** Extra facts an error can carry. */
export interface GatewayErrorOptions {
  /** snake_case error type for the /api envelope; defaults to the code. */
  type?: string;
  /** Dotted path of the offending field, e.g. `client.name`. */
  field?: string;
  /** HTTP status for the documented cases a code cannot express (409, 410, 422). */
  httpStatus?: number;
  /** The underlying error. */
  cause?: unknown;
  /** Seconds a client should wait before trying again; sent as the retry-after header on every protocol. */
  retryAfterSeconds?: number;
}

/** An error with a stable code and a message a user can act on. */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly type: string;
  readonly field: string | undefined;
  readonly httpStatus: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: GatewayErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "GatewayError";
    this.code = code;
    this.type = options.type ?? code;
    this.field = options.field;
    this.httpStatus = options.httpStatus;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Shorthand for a 400 that names the offending field. */
export function invalidField(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { field });
}

/** The HTTP status of each code when an error names none; Connect's mapping, so every protocol agrees. */
const HTTP_STATUS_OF_CODE: Record<GatewayErrorCode, number> = {
  invalid_argument: 400,
  not_found: 404,
  already_exists: 409,
  failed_precondition: 400,
  permission_denied: 403,
  unauthenticated: 401,
  resource_exhausted: 429,
  unimplemented: 501,
  unavailable: 503,
  deadline_exceeded: 504,
  internal: 500,
};

/** The HTTP status to answer `err` with: the one it names, else its code's. */
export function httpStatusOf(err: GatewayError): number {
  return err.httpStatus ?? HTTP_STATUS_OF_CODE[err.code];
}

/** RPC metadata header carrying an error's snake_case type, for the REST envelope. */
export const ERROR_TYPE_HEADER = "gw-error-type";
/** RPC metadata header carrying an error's explicit HTTP status, for REST. */
export const HTTP_STATUS_HEADER = "gw-http-status";

/** RPC metadata and HTTP header telling a refused client how many seconds to wait. */
export const RETRY_AFTER_HEADER = "retry-after";

/** The RPC metadata that carries `err`'s type, explicit status and retry-after to the REST bridge and RPC clients. */
export function errorMetadata(err: GatewayError): Headers {
  const metadata = new Headers({ [ERROR_TYPE_HEADER]: err.type });
  if (err.httpStatus !== undefined) metadata.set(HTTP_STATUS_HEADER, String(err.httpStatus));
  if (err.retryAfterSeconds !== undefined) metadata.set(RETRY_AFTER_HEADER, String(err.retryAfterSeconds));
  return metadata;
}
