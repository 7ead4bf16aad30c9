/**
 * The one place where errors become ConnectErrors. GatewayError codes map 1:1 to Connect codes; the
 * error type and any explicit HTTP status travel as metadata so the REST bridge can render the
 * documented 409/410/422 statuses and the `{"error": {"type", "message"}}` envelope.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { GatewayError, type GatewayErrorCode } from "../errors.js";
import { isUniqueViolation } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";

/** Metadata header carrying the snake_case error type. */
export const ERROR_TYPE_HEADER = "gw-error-type";
/** Metadata header carrying an explicit HTTP status for REST. */
export const HTTP_STATUS_HEADER = "gw-http-status";

const CODES: Record<GatewayErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  permission_denied: Code.PermissionDenied,
  unauthenticated: Code.Unauthenticated,
  resource_exhausted: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
  internal: Code.Internal,
};

/** Converts anything thrown by a service into a ConnectError a client can act on. */
export function toConnectError(err: unknown, logger: Logger): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof GatewayError) {
    const metadata = new Headers({ [ERROR_TYPE_HEADER]: err.type });
    if (err.httpStatus !== undefined) metadata.set(HTTP_STATUS_HEADER, String(err.httpStatus));
    if (err.code === "internal") logger.error({ err }, err.message);
    return new ConnectError(err.message, CODES[err.code], metadata, undefined, err);
  }
  if (isUniqueViolation(err)) {
    return new ConnectError("a record with the same unique name already exists", Code.AlreadyExists, new Headers({ [ERROR_TYPE_HEADER]: "already_exists" }));
  }
  logger.error({ err }, "unexpected error in a service call");
  return new ConnectError("internal error: the gateway log has the details", Code.Internal);
}

/** Interceptor that maps every thrown error through toConnectError. */
export function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      throw toConnectError(err, logger);
    }
  };
}
