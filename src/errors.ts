/**
 * The gateway's own error type. Every layer below services/ throws this; services/ maps it to a
 * ConnectError in one place, and the REST bridge maps that to an HTTP status and the /api envelope.
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
}

/** An error with a stable code and a message a user can act on. */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly type: string;
  readonly field: string | undefined;
  readonly httpStatus: number | undefined;

  constructor(code: GatewayErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "GatewayError";
    this.code = code;
    this.type = options.type ?? code;
    this.field = options.field;
    this.httpStatus = options.httpStatus;
  }
}

/** Shorthand for a 400 that names the offending field. */
export function invalidField(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { field });
}
