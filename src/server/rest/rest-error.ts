/**
 * Errors on the REST bridge: the ones the bridge itself raises (400, 405, 413, 415) and the mapping of
 * any error to the /api envelope `{"error": {"type", "message"}}` and an HTTP status.
 */
import { toJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { ERROR_TYPE_HEADER, GatewayError, HTTP_STATUS_HEADER, httpStatusOf, RETRY_AFTER_HEADER } from "../../errors.js";

export { invalidRequest } from "../../proto-json/input-error.js";

/** A 405 for a path that exists with other methods; the caller adds the Allow header. */
export function methodNotAllowed(method: string, path: string, allow: readonly string[]): GatewayError {
  return new GatewayError(
    "unimplemented",
    `method ${method} is not allowed on ${path}; allowed: ${allow.join(", ")}`,
    { type: "method_not_allowed", httpStatus: 405 },
  );
}

/** A 413 for a body over the configured limit. */
export function payloadTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    "resource_exhausted",
    `request body is larger than the limit of ${maxBytes} bytes`,
    { type: "payload_too_large", httpStatus: 413 },
  );
}

/** A 415 for a body that is not JSON. */
export function unsupportedMediaType(what: string): GatewayError {
  return new GatewayError("invalid_argument", `${what}; send the body as application/json`, {
    type: "unsupported_media_type",
    httpStatus: 415,
  });
}

/** What the bridge writes for an error. */
export interface RestErrorResponse {
  status: number;
  /** `param` and `code` are set on paths under /v1, for OpenAI clients. */
  body: { error: { type: string; message: string; param?: null; code?: string } } & Record<string, unknown>;
  /** Response headers the error carries (retry-after). */
  headers: Record<string, string>;
}

/**
 * Maps a GatewayError or ConnectError to the envelope; anything else is a bug in the gateway and is
 * returned as undefined so the caller logs it and answers 500 without leaking its text.
 */
export function restErrorResponse(err: unknown): RestErrorResponse | undefined {
  if (err instanceof GatewayError) {
    const headers: Record<string, string> = err.retryAfterSeconds === undefined ? {} : { [RETRY_AFTER_HEADER]: String(err.retryAfterSeconds) };
    return { status: httpStatusOf(err), body: { error: { type: err.type, message: err.message } }, headers };
  }
  if (err instanceof ConnectError) return fromConnectError(err);
  return undefined;
}

function fromConnectError(err: ConnectError): RestErrorResponse {
  const explicitStatus = Number(err.metadata.get(HTTP_STATUS_HEADER) ?? "");
  const status =
    Number.isInteger(explicitStatus) && explicitStatus >= 400 && explicitStatus <= 599
      ? explicitStatus
      : codeToHttpStatus(err.code);
  const type = err.metadata.get(ERROR_TYPE_HEADER) || codeToString(err.code);
  const retryAfter = err.metadata.get(RETRY_AFTER_HEADER);
  const headers: Record<string, string> = retryAfter !== null && /^\d+$/.test(retryAfter) ? { [RETRY_AFTER_HEADER]: retryAfter } : {};
  return { status, body: { ...extraFields(err), error: { type, message: err.rawMessage } }, headers };
}

/**
 * Some documented errors carry more than type and message (e.g. `mcp_auth_required` beside `error`);
 * a service attaches those as a google.protobuf.Struct error detail, whose fields go at the top level.
 */
function extraFields(err: ConnectError): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  try {
    for (const detail of err.findDetails(StructSchema)) {
      Object.assign(extra, toJson(StructSchema, detail));
    }
  } catch {
    // A malformed detail must not hide the error itself.
  }
  return extra;
}
