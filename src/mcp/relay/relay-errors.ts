/**
 * The JSON-RPC errors of the /mcp/<client> relay, and the one place where what is thrown while relaying (an
 * end's own JSON-RPC error, the SDK's timeout or closed connection, a transport failure, a gateway refusal)
 * becomes the error the other end is answered with. An end's own error passes with its code, message and
 * data unchanged.
 */
import { randomUUID } from "node:crypto";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../errors.js";
import { McpAuthRequiredError } from "../credentials/auth-required.js";
import { upstreamFailure, upstreamMessage } from "../upstream-errors.js";

/** An error answered exactly as given: the SDK's Protocol sends `code`, `message` and `data` as they are. */
export class RelayedError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RelayedError";
  }
}

/** The upstream connection failed or closed (the SDK's own code for a closed connection). */
export const UPSTREAM_UNAVAILABLE = ErrorCode.ConnectionClosed;
/** A request the relay ran out of time for. */
export const RELAY_TIMEOUT = ErrorCode.RequestTimeout;
/** The MCP code for "the user must first visit a URL" (URL-mode elicitation required). */
export const URL_ELICITATION_REQUIRED = ErrorCode.UrlElicitationRequired;

/** The message the SDK's McpError was built from: it prefixes "MCP error <code>: ", which must not pile up hop by hop. */
function ownMessage(err: McpError): string {
  const prefix = `MCP error ${err.code}: `;
  return err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
}

/**
 * What to answer for an error met while relaying `method` to the other end: that end's JSON-RPC error as
 * it came, a timeout as -32001, anything else as an upstream failure (-32000) with a one-line message.
 */
export function relayedError(err: unknown, method: string, timeoutMs: number): RelayedError {
  if (err instanceof RelayedError) return err;
  if (err instanceof McpError) return new RelayedError(err.code, ownMessage(err), err.data);
  const failure = upstreamFailure(err, method, timeoutMs);
  return new RelayedError(failure.type === "upstream_timeout" ? RELAY_TIMEOUT : UPSTREAM_UNAVAILABLE, failure.message);
}

/** The relay could not open its upstream session: a refusal of the gateway's, or the upstream's failure. */
export function openFailed(err: unknown): RelayedError {
  if (err instanceof GatewayError) return new RelayedError(UPSTREAM_UNAVAILABLE, upstreamMessage(err));
  return relayedError(err, "initialize", 0);
}

/** A request of `method` the relay stopped waiting for after `timeoutMs`. */
export function relayTimeout(method: string, timeoutMs: number): McpError {
  return new McpError(RELAY_TIMEOUT, `${method} timed out after ${timeoutMs} ms: the upstream did not answer in time`);
}

/** The downstream client went away (its response stream closed) before the answer. */
export function clientGone(method: string): McpError {
  return new McpError(ErrorCode.ConnectionClosed, `${method} was abandoned: the MCP client closed the stream it was waiting on`);
}

/** A server-to-client request of a shared (stdio) upstream that no one downstream session is waiting on. */
export function untiedRequest(method: string): McpError {
  return new McpError(
    ErrorCode.InternalError,
    `${method} cannot be answered: it is not tied to a request of one MCP client session of the gateway (none, or several, are waiting on this server)`,
  );
}

/** A server-to-client request past the session's bound on pending ones. */
export function tooManyPending(method: string, bound: number): McpError {
  return new McpError(ErrorCode.InternalError, `${method} refused: the MCP client session already has ${bound} requests of the server waiting for an answer`);
}

/** A server-to-client request the downstream client did not declare the capability for. */
export function capabilityMissing(method: string, capability: string): McpError {
  return new McpError(ErrorCode.MethodNotFound, `${method} is not supported by the MCP client of this session: it did not declare the ${capability} capability`);
}

/** An elicitation in a mode the downstream client did not declare. */
export function elicitationModeMissing(mode: string): McpError {
  return new McpError(ErrorCode.InvalidParams, `elicitation/create in ${mode} mode is not supported by the MCP client of this session: it did not declare elicitation.${mode}`);
}

/**
 * The answer to a request other than tools/call while the caller has no credential for a per-user client:
 * with a flow to finish, the MCP "URL elicitation required" error naming its page; the mcp_auth_required
 * payload rides along in the data either way.
 */
export function credentialRequired(err: McpAuthRequiredError | GatewayError): RelayedError {
  if (!(err instanceof McpAuthRequiredError)) return new RelayedError(UPSTREAM_UNAVAILABLE, err.message);
  const { payload } = err;
  if (payload.kind === "exchange") return new RelayedError(UPSTREAM_UNAVAILABLE, payload.message, { mcp_auth_required: payload });
  const elicitation = { mode: "url", elicitationId: randomUUID(), url: payload.submit_url, message: payload.message };
  return new RelayedError(URL_ELICITATION_REQUIRED, payload.message, { elicitations: [elicitation], mcp_auth_required: payload });
}
