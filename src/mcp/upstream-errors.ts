/**
 * How an upstream MCP failure becomes a GatewayError: one of three types the runtime acts on
 * (upstream_auth_rejected, upstream_timeout, upstream_error), always with a short, single-line message
 * that keeps the network cause (fetch's "fetch failed" hides it in its cause chain).
 */
import { SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../errors.js";

/** Collapses whitespace and caps length, as every upstream message we repeat must be (docs/mcp-gateway.md). */
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
  if (err instanceof SseError || err instanceof UpstreamHttpStatusError) {
    return typeof err.code === "number" ? err.code : undefined;
  }
  return undefined;
}

/** How deep a cause chain is searched for network facts. */
const MAX_CAUSE_DEPTH = 5;

/** A Node.js system error or an undici error: a code, and for a socket the address it was for. */
interface NetworkFacts {
  code: string;
  address?: unknown;
  port?: unknown;
}

function isNetworkFacts(value: unknown): value is NetworkFacts {
  if (value === null || typeof value !== "object") return false;
  const code = (value as { code?: unknown }).code;
  return typeof code === "string" && /^(E[A-Z0-9_]+|UND_ERR_[A-Z_]+)$/.test(code);
}

function describeFacts(facts: NetworkFacts): string {
  if (typeof facts.address !== "string") return facts.code;
  const host = facts.address.includes(":") ? `[${facts.address}]` : facts.address;
  return typeof facts.port === "number" ? `${facts.code} ${host}:${facts.port}` : `${facts.code} ${host}`;
}

/**
 * The network cause of an error, e.g. "ECONNREFUSED 127.0.0.1:9": the first Node.js or undici error
 * code in its cause chain, with the address it was for; every address when a connection attempt to
 * several (IPv6 and IPv4) failed as an AggregateError. Undefined when the chain has none.
 */
export function networkCause(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current !== null && typeof current === "object"; depth++) {
    if (current instanceof AggregateError) {
      const parts = current.errors.filter(isNetworkFacts).map(describeFacts);
      if (parts.length > 0) return [...new Set(parts)].join(", ");
    }
    if (isNetworkFacts(current)) return describeFacts(current);
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The message of `err` with its cause added when the message does not already say it: the network
 * cause when there is one, else the direct cause's own message (undici's "bad port", say).
 */
function messageWithCause(err: unknown): string {
  const message = upstreamMessage(err);
  const direct = err instanceof Error && err.cause instanceof Error ? upstreamMessage(err.cause) : undefined;
  const cause = networkCause(err) ?? direct;
  return cause === undefined || message.includes(cause) ? message : `${message} (${cause})`;
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
  return upstreamError(`${what} failed: ${messageWithCause(err)}${suffix}`, err);
}
