/**
 * How an upstream MCP failure becomes a GatewayError: one of three types the runtime acts on
 * (upstream_auth_rejected, upstream_timeout, upstream_error), always with a short, single-line message.
 */
import { SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../errors.js";

/** Collapses whitespace and caps length, as the spec asks of every upstream message we repeat. */
export function upstreamMessage(err: unknown, max = 512): string {
  const raw = err instanceof Error ? err.message : String(err);
  const collapsed = raw.replace(/\s+/g, " ").trim() || "unknown upstream error";
  return collapsed.length > max ? `${collapsed.slice(0, max - 1)}…` : collapsed;
}

/**
 * An HTTP status the SDK would otherwise only mention in prose (the SSE transport's POSTs), so that a
 * 401/403 is recognised from a number, not from parsing a message.
 */
export class UpstreamHttpStatusError extends Error {
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.name = "UpstreamHttpStatusError";
    this.code = code;
  }
}

/** The HTTP status an SDK transport error carries, if it is one of those that carry it. */
function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof StreamableHTTPError || err instanceof SseError || err instanceof UpstreamHttpStatusError) {
    return typeof err.code === "number" ? err.code : undefined;
  }
  return undefined;
}

/** The upstream did not answer `what` within `timeoutMs`. */
export function upstreamTimeout(what: string, timeoutMs: number, cause?: unknown): GatewayError {
  return new GatewayError("deadline_exceeded", upstreamMessage(`${what} timed out after ${timeoutMs} ms: the upstream did not answer in time`), {
    type: "upstream_timeout",
    cause,
  });
}

/** A generic upstream failure (code unavailable, type upstream_error). */
export function upstreamError(message: string, cause?: unknown): GatewayError {
  return new GatewayError("unavailable", upstreamMessage(message), { type: "upstream_error", cause });
}

/**
 * Classifies anything thrown while talking to an upstream. `what` names the operation for the message;
 * `hint` (e.g. a child's last stderr line) is appended when present.
 */
export function upstreamFailure(err: unknown, what: string, timeoutMs: number, hint?: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const suffix = hint ? ` (${hint})` : "";
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) return upstreamTimeout(what, timeoutMs, err);
  const status = httpStatusOf(err);
  if (status === 401 || status === 403) {
    return new GatewayError(
      "unavailable",
      upstreamMessage(`${what}: the upstream rejected the credentials (HTTP ${status}); check the client's headers: ${upstreamMessage(err)}`),
      { type: "upstream_auth_rejected", cause: err },
    );
  }
  return upstreamError(`${what} failed: ${upstreamMessage(err)}${suffix}`, err);
}
