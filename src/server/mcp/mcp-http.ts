/**
 * What every MCP path of the gateway (/mcp and /mcp/<client>, both transports) does the same way before
 * any JSON-RPC runs: read the body within the size limit and check it is JSON-RPC, resolve the caller (the
 * /v1 caller headers, or an OAuth access token standing for its virtual key), and answer a refusal or a
 * failure as a JSON-RPC error.
 */
import type { IncomingHttpHeaders } from "node:http";
import { isInitializeRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError, httpStatusOf } from "../../errors.js";
import type { McpServerAuthMode } from "../../config/mcp-server-settings.js";
import { headerValue } from "../../http-headers.js";
import { originOfHeaders } from "../../mcp/credentials/index.js";
import { jsonRpcKind } from "../../mcp/json-rpc-kind.js";
import type { McpCaller, McpServerTools } from "../../services/mcp-server-tools.js";
import type { Logger } from "../../telemetry/logger.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { OAuth2Server } from "../oauth2/oauth2-server.js";
import type { Req, Res } from "../node-http.js";
import { sendJson } from "../node-http.js";
import { dropRefusedBody } from "../refused-body.js";
import { ClientClosedError, readBodyBytes } from "../rest/request-body.js";

/** JSON-RPC error codes the MCP paths answer with themselves. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
/** The SDK's code for an unknown session; kept so clients recognise it. */
export const SESSION_NOT_FOUND = -32001;
/** Invalid method parameters. */
export const INVALID_PARAMS = -32602;
/** Server errors (the JSON-RPC range for implementation-defined errors). */
export const SERVER_ERROR = -32000;

/** The header of the Streamable HTTP session. */
export const SESSION_HEADER = "mcp-session-id";

/** OAuth access tokens on the MCP paths (client.mcp_server_auth_mode `both` or `oauth`). */
export interface McpOAuth {
  server: OAuth2Server;
  mode: () => McpServerAuthMode;
}

/** A JSON-RPC error answer. */
export function sendRpcError(res: Res, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

/** A refusal answered before any JSON-RPC runs. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** An unknown session, or one another caller opened. */
export function sessionNotFound(): Refusal {
  return new Refusal(404, SESSION_NOT_FOUND, "Session not found: it was closed, or it belongs to another caller; initialize a new session");
}

/** The session table is full. */
export function sessionsFull(max: number): Refusal {
  return new Refusal(503, SERVER_ERROR, `too many MCP sessions are open (at most ${max}); close unused sessions or try again later`, { "retry-after": "60" });
}

/** A method the path does not serve. */
export function methodRefused(method: string | undefined, path: string, allowed: string): Refusal {
  return new Refusal(405, SERVER_ERROR, `method ${method ?? ""} is not allowed on ${path}; use ${allowed.replace(/, (?=[^,]*$)/, " or ")}`, { allow: allowed });
}

/**
 * The body as JSON-RPC messages: 413 past the limit, 415 unless it is sent as `application/json` (as both MCP
 * transports require, and the SDK's transports on /mcp check), -32700 for bad JSON, -32600 for what is not
 * JSON-RPC. The body is read first, within the limit, so a refused one leaves the connection usable.
 */
export async function readMessages(req: Req, maxBodyBytes: number): Promise<{ body: unknown; messages: unknown[] }> {
  const bytes = await readBodyBytes(req, maxBodyBytes);
  const type = headerValue(req.headers, "content-type");
  if (type?.split(";")[0]?.trim().toLowerCase() !== "application/json") {
    throw new Refusal(415, SERVER_ERROR, `Unsupported Media Type: send the JSON-RPC body with Content-Type application/json${type === undefined ? "" : ` (got ${JSON.stringify(type)})`}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new Refusal(400, PARSE_ERROR, `Parse error: the body is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: an empty batch");
  for (const message of messages) {
    if (jsonRpcKind(message) === null) {
      throw new Refusal(400, INVALID_REQUEST, 'Invalid Request: each message must be a JSON-RPC 2.0 request, notification or response ({"jsonrpc": "2.0", "method": ..., "id": ...})');
    }
  }
  return { body, messages };
}

/**
 * The first id among the requests of `messages` (checked JSON-RPC) that a request still in flight on the
 * session, or an earlier request of the same batch, already uses; undefined when none does. Ids match by
 * type and value, as JSON-RPC matches answers to requests.
 */
export function reusedRequestId(messages: readonly unknown[], inFlight: (id: RequestId) => boolean): RequestId | undefined {
  const batch = new Set<RequestId>();
  for (const message of messages) {
    if (jsonRpcKind(message) !== "request") continue;
    const id = (message as { id: RequestId }).id;
    if (inFlight(id) || batch.has(id)) return id;
    batch.add(id);
  }
  return undefined;
}

/** The -32600 refusal of a request whose id a request in flight on the session already uses. */
export function idInUse(id: RequestId): Refusal {
  return new Refusal(400, INVALID_REQUEST, `Invalid Request: the id ${JSON.stringify(id)} is already used by a request of this session still in flight; use a new id for each request`);
}

/**
 * Refuses a POST without a session id that does not start a session: an initialize request whose params
 * are not initialize's is -32602 saying what they must hold; anything else -32000 asking for the session id
 * or an initialize.
 */
export function checkSessionStart<T extends { messages: readonly unknown[] }>(parsed: T | null): asserts parsed is T {
  const messages = parsed?.messages;
  if (messages?.some(isInitializeRequest)) return;
  if (messages?.some((m) => jsonRpcKind(m) === "request" && (m as { method?: unknown }).method === "initialize")) {
    throw new Refusal(400, INVALID_PARAMS, "Invalid params: initialize takes params {protocolVersion: string, capabilities: object, clientInfo: {name, version}}");
  }
  throw new Refusal(400, SERVER_ERROR, "Bad Request: send the Mcp-Session-Id header the initialize answer gave, or start with an initialize request");
}

/** The header a token's virtual key is passed on in, as if the caller had sent it. */
const VK_HEADER = "x-gw-vk";
/** The headers that identify a caller without a token. */
const CALLER_HEADERS = ["x-gw-vk", "authorization", "x-api-key", "x-goog-api-key", "x-gw-mcp-session-id"];

/** Resolves the caller of an MCP request; refusals (bad key, missing token) are Refusals. */
export function createCallerResolver(tools: McpServerTools, oauth: McpOAuth | undefined): (req: Req, trace: TraceNode | undefined) => Promise<McpCaller> {
  /** The caller headers to resolve on an endpoint that takes OAuth: a valid access token stands for its virtual key, as x-gw-vk would. */
  async function authenticated(req: Req, oauth: McpOAuth, mode: McpServerAuthMode): Promise<IncomingHttpHeaders> {
    const origin = originOfHeaders(req.headers) ?? "";
    const bearer = /^Bearer\s+(\S+)$/i.exec(headerValue(req.headers, "authorization") ?? "")?.[1];
    const challenge = (error?: string) => ({ "www-authenticate": oauth.server.challenge(origin, error) });
    // An access token is a JWT; anything else in the header is a virtual key (in `both`).
    if (bearer !== undefined && bearer.split(".").length === 3) {
      const subject = await oauth.server.verify(bearer, origin);
      if (subject === null) throw new Refusal(401, SERVER_ERROR, "the access token is not valid here: expired, revoked, for another resource, or its virtual key is gone; sign in again", challenge("invalid_token"));
      const { authorization: _token, ...rest } = req.headers;
      return { ...rest, [VK_HEADER]: subject.key.value };
    }
    if (mode === "oauth" || !CALLER_HEADERS.some((name) => req.headers[name] !== undefined)) {
      throw new Refusal(401, SERVER_ERROR, mode === "oauth" ? "this /mcp needs an OAuth access token: let your MCP client sign in (it finds the server from this answer)" : "this /mcp needs a virtual key in the caller headers or an OAuth access token", challenge());
    }
    return req.headers;
  }

  return async (req, trace) => {
    // Without OAuth the headers are the caller's as they came: no turn spent waiting on them.
    const mode = oauth?.mode() ?? "headers";
    const headers = oauth === undefined || mode === "headers" ? req.headers : await authenticated(req, oauth, mode);
    try {
      const caller = await tools.caller(headers);
      if (trace === undefined) return caller;
      if (caller.key !== null) trace.virtualKey(caller.key.id, caller.key.name);
      // The tool calls of this request hang under its span.
      return { ...caller, trace };
    } catch (err) {
      if (err instanceof GatewayError) throw new Refusal(httpStatusOf(err), SERVER_ERROR, err.message);
      throw err;
    }
  };
}

/** Answers a request that failed before or while the transport ran. */
export function failMcpRequest(logger: Logger, req: Req, res: Res, err: unknown): void {
  if (err instanceof ClientClosedError) return;
  if (err instanceof Refusal) {
    sendRpcError(res, err.status, err.code, err.message, err.headers);
    return;
  }
  if (err instanceof GatewayError) {
    const status = httpStatusOf(err);
    sendRpcError(res, status, status === 413 ? INVALID_REQUEST : SERVER_ERROR, err.message);
    if (status === 413) dropRefusedBody(req, res);
    return;
  }
  logger.error({ err }, "the MCP endpoint failed");
  if (!res.headersSent) sendRpcError(res, 500, SERVER_ERROR, "internal error: the gateway log has the details");
  else res.end();
}
