/**
 * The one place where errors become ConnectErrors. GatewayError codes map 1:1 to Connect codes; the
 * error type and any explicit HTTP status travel as metadata so the REST bridge can render the
 * documented 409/410/422 statuses and the `{"error": {"type", "message"}}` envelope.
 */
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ERROR_TYPE_HEADER, errorMetadata, GatewayError, type GatewayErrorCode } from "../errors.js";
import { isDatabaseUnavailable, isUniqueViolation, isUnstorableText, UnstorableTextError } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";

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

/**
 * A ConnectError for a GatewayError with extra top-level JSON fields: the REST bridge puts the fields of
 * a google.protobuf.Struct detail beside `error` (e.g. `mcp_auth_required`, `temp_token`).
 */
export function errorWithFields(err: GatewayError, fields: JsonObject): ConnectError {
  return new ConnectError(err.message, CODES[err.code], errorMetadata(err), [{ desc: StructSchema, value: fromJson(StructSchema, fields) }]);
}

/** Converts anything thrown by a service into a ConnectError a client can act on. */
export function toConnectError(err: unknown, logger: Logger): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof GatewayError) {
    if (err.code === "internal") logger.error({ err }, err.message);
    return new ConnectError(err.message, CODES[err.code], errorMetadata(err), undefined, err);
  }
  if (isUniqueViolation(err)) {
    return new ConnectError("a record with the same unique name already exists", Code.AlreadyExists, new Headers({ [ERROR_TYPE_HEADER]: "already_exists" }));
  }
  if (isUnstorableText(err)) {
    const refused = new UnstorableTextError(err);
    return new ConnectError(refused.message, CODES[refused.code], errorMetadata(refused), undefined, err);
  }
  if (isDatabaseUnavailable(err)) {
    logger.warn({ err }, "the database is unreachable; answered 503");
    return new ConnectError(
      "the database is unreachable right now, so the change was not saved; inference keeps serving from memory. Retry once the database is back",
      Code.Unavailable,
      new Headers({ [ERROR_TYPE_HEADER]: "database_unavailable" }),
    );
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
