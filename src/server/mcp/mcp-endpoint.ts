/**
 * The gateway as an MCP server on its one port: Streamable HTTP at /mcp (POST, GET stream, DELETE;
 * sessions by Mcp-Session-Id) and the legacy HTTP+SSE transport at /mcp/sse + /mcp/messages. Bodies are
 * read here within the gateway's size limit and checked as JSON-RPC before the SDK transport sees them;
 * every request resolves its caller, and a session answers only the caller that opened it.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest, isJSONRPCRequest, JSONRPCMessageSchema, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError, httpStatusOf } from "../../errors.js";
import type { McpCaller, McpServerTools } from "../../services/mcp-server-tools.js";
import type { McpServerAuthMode } from "../../config/mcp-server-settings.js";
import { originOfHeaders } from "../../mcp/credentials/index.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { Logger } from "../../telemetry/logger.js";
import type { OAuth2Server } from "../oauth2/oauth2-server.js";
import type { Req, Res } from "../node-http.js";
import { sendJson } from "../node-http.js";
import { dropRefusedBody } from "../refused-body.js";
import { ClientClosedError, readBodyBytes } from "../rest/request-body.js";
import { createGatewayMcpServer } from "./gateway-mcp-server.js";
import { DEFAULT_SESSION_LIMITS, McpSession, McpSessions, newSessionId, toolSignature, type McpSessionLimits } from "./mcp-sessions.js";
import { headerValue } from "../../http-headers.js";

/** The Streamable HTTP endpoint. */
export const MCP_PATH = "/mcp";
/** The legacy SSE stream. */
export const MCP_SSE_PATH = "/mcp/sse";
/** Where legacy SSE clients post their messages. */
export const MCP_MESSAGES_PATH = "/mcp/messages";

let sseTransport: Promise<typeof import("@modelcontextprotocol/sdk/server/sse.js")> | undefined;

/** The legacy SSE transport, loaded on its first session: its body parser and charset tables are a fifteenth of the bundle. */
function loadSseTransport(): Promise<typeof import("@modelcontextprotocol/sdk/server/sse.js")> {
  sseTransport ??= import("@modelcontextprotocol/sdk/server/sse.js");
  return sseTransport;
}

/** What the endpoint needs. */
export interface McpEndpointOptions {
  tools: McpServerTools;
  logger: Logger;
  version: string;
  maxBodyBytes: number;
  limits?: Partial<McpSessionLimits>;
  /** OAuth access tokens on /mcp (client.mcp_server_auth_mode `both` or `oauth`); absent: headers only. */
  oauth?: { server: OAuth2Server; mode: () => McpServerAuthMode };
}

/** The endpoint: `handle` serves the three paths, `close` ends every session. */
export interface McpEndpoint {
  /** Serves one request; `trace` is its SERVER span when the request is traced. */
  handle(req: Req, res: Res, path: string, trace?: TraceNode): void;
  close(): Promise<void>;
}

/** JSON-RPC error codes the endpoint answers with itself. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** The SDK's code for an unknown session; kept so clients recognise it. */
const SESSION_NOT_FOUND = -32001;
/** Server errors (the JSON-RPC range for implementation-defined errors). */
const SERVER_ERROR = -32000;

/** A JSON-RPC error answer. */
function sendRpcError(res: Res, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

/** A refusal the endpoint answers before any JSON-RPC runs. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const SESSION_HEADER = "mcp-session-id";
/** The header a token's virtual key is passed on in, as if the caller had sent it. */
const VK_HEADER = "x-gw-vk";
/** The headers that identify a caller without a token. */
const CALLER_HEADERS = ["x-gw-vk", "authorization", "x-api-key", "x-goog-api-key", "x-gw-mcp-session-id"];

/** Builds the endpoint and its session table. */
export function createMcpEndpoint(opts: McpEndpointOptions): McpEndpoint {
  const limits = { ...DEFAULT_SESSION_LIMITS, ...opts.limits };
  const sessions = new McpSessions(opts.tools, opts.logger, limits);

  /** The body as JSON-RPC messages: 413 past the limit, -32700 for bad JSON, -32600 for what is not JSON-RPC. */
  async function readMessages(req: Req): Promise<{ body: unknown; messages: unknown[] }> {
    const bytes = await readBodyBytes(req, opts.maxBodyBytes);
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString("utf8"));
    } catch (err) {
      throw new Refusal(400, PARSE_ERROR, `Parse error: the body is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: an empty batch");
    for (const message of messages) {
      if (!JSONRPCMessageSchema.safeParse(message).success) {
        throw new Refusal(400, INVALID_REQUEST, 'Invalid Request: each message must be a JSON-RPC 2.0 request, notification or response ({"jsonrpc": "2.0", "method": ..., "id": ...})');
      }
    }
    return { body, messages };
  }

  /** The caller headers to resolve: a valid access token stands for its virtual key, as x-gw-vk would. */
  async function authenticated(req: Req): Promise<IncomingHttpHeaders> {
    const mode = opts.oauth?.mode() ?? "headers";
    if (opts.oauth === undefined || mode === "headers") return req.headers;
    const origin = originOfHeaders(req.headers) ?? "";
    const bearer = /^Bearer\s+(\S+)$/i.exec(headerValue(req.headers, "authorization") ?? "")?.[1];
    const challenge = (error?: string) => ({ "www-authenticate": opts.oauth?.server.challenge(origin, error) ?? "" });
    // An access token is a JWT; anything else in the header is a virtual key (in `both`).
    if (bearer !== undefined && bearer.split(".").length === 3) {
      const subject = await opts.oauth.server.verify(bearer, origin);
      if (subject === null) throw new Refusal(401, SERVER_ERROR, "the access token is not valid here: expired, revoked, for another resource, or its virtual key is gone; sign in again", challenge("invalid_token"));
      const { authorization: _token, ...rest } = req.headers;
      return { ...rest, [VK_HEADER]: subject.key.value };
    }
    if (mode === "oauth" || !CALLER_HEADERS.some((name) => req.headers[name] !== undefined)) {
      throw new Refusal(401, SERVER_ERROR, mode === "oauth" ? "this /mcp needs an OAuth access token: let your MCP client sign in (it finds the server from this answer)" : "this /mcp needs a virtual key in the caller headers or an OAuth access token", challenge());
    }
    return req.headers;
  }

  async function callerOf(req: Req, trace: TraceNode | undefined): Promise<McpCaller> {
    const headers = await authenticated(req);
    try {
      const caller = await opts.tools.caller(headers);
      if (trace === undefined) return caller;
      if (caller.key !== null) trace.virtualKey(caller.key.id, caller.key.name);
      // The tool calls of this request hang under its span.
      return { ...caller, trace };
    } catch (err) {
      if (err instanceof GatewayError) throw new Refusal(httpStatusOf(err), SERVER_ERROR, err.message);
      throw err;
    }
  }

  /** The ids of the requests whose handlers read their caller (only those take the entry back out). */
  function requestIds(messages: readonly unknown[]): RequestId[] {
    return messages.filter(isJSONRPCRequest).filter((m) => m.method === "tools/list" || m.method === "tools/call").map((m) => m.id);
  }

  function notFound(): Refusal {
    return new Refusal(404, SESSION_NOT_FOUND, "Session not found: it was closed, or it belongs to another caller; initialize a new session");
  }

  function full(): Refusal {
    return new Refusal(503, SERVER_ERROR, `too many MCP sessions are open (at most ${limits.maxSessions}); close unused sessions or try again later`, { "retry-after": "60" });
  }

  /** A new session's server, bound to the session once it exists. */
  function sessionServer(caller: McpCaller, sessionRef: { current?: McpSession }) {
    return createGatewayMcpServer({
      tools: opts.tools,
      logger: opts.logger,
      version: opts.version,
      callerOf: (id) => sessionRef.current?.callerOf(id) ?? caller,
      listed: (tools) => {
        if (sessionRef.current) sessionRef.current.toolSignature = toolSignature(tools);
      },
    });
  }

  async function streamable(req: Req, res: Res, trace: TraceNode | undefined): Promise<void> {
    const method = req.method ?? "GET";
    if (method !== "POST" && method !== "GET" && method !== "DELETE") {
      throw new Refusal(405, SERVER_ERROR, `method ${method} is not allowed on ${MCP_PATH}; use POST, GET or DELETE`, { allow: "POST, GET, DELETE" });
    }
    const parsed = method === "POST" ? await readMessages(req) : null;
    const caller = await callerOf(req, trace);
    const sessionId = headerValue(req.headers, SESSION_HEADER);
    const nodeReq = req as IncomingMessage;
    const nodeRes = res as ServerResponse;
    if (sessionId !== undefined) {
      const session = sessions.find(sessionId, caller.owner);
      if (!session) throw notFound();
      session.seen(caller, parsed ? requestIds(parsed.messages) : []);
      if (method === "GET") session.holdStream(res);
      await (session.transport as StreamableHTTPServerTransport).handleRequest(nodeReq, nodeRes, parsed?.body);
      return;
    }
    if (parsed === null || !parsed.messages.some(isInitializeRequest)) {
      throw new Refusal(400, SERVER_ERROR, `Bad Request: send the Mcp-Session-Id header the initialize answer gave, or start with an initialize request`);
    }
    if (!sessions.hasRoom()) throw full();
    const ref: { current?: McpSession } = {};
    const server = sessionServer(caller, ref);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: newSessionId,
      onsessioninitialized: (id) => {
        const session = new McpSession(id, "streamable_http", caller.owner, server, transport, caller, toolSignature(opts.tools.list(caller)));
        ref.current = session;
        sessions.add(session);
      },
      onsessionclosed: (id) => sessions.remove(id),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.remove(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(nodeReq, nodeRes, parsed.body);
    // An initialize the SDK refused opened no session: nothing is left to keep.
    if (ref.current === undefined) await server.close();
  }

  async function sseStream(req: Req, res: Res, trace: TraceNode | undefined): Promise<void> {
    if (req.method !== "GET") throw new Refusal(405, SERVER_ERROR, `method ${req.method ?? ""} is not allowed on ${MCP_SSE_PATH}; use GET`, { allow: "GET" });
    const caller = await callerOf(req, trace);
    const { SSEServerTransport } = await loadSseTransport();
    if (!sessions.hasRoom()) throw full();
    const id = newSessionId();
    const ref: { current?: McpSession } = {};
    const server = sessionServer(caller, ref);
    // The session travels in our own `sid` parameter (256 random bits); the SDK adds its own sessionId next to it.
    const transport = new SSEServerTransport(`${MCP_MESSAGES_PATH}?sid=${id}`, res as ServerResponse);
    const session = new McpSession(id, "sse", caller.owner, server, transport, caller, toolSignature(opts.tools.list(caller)));
    ref.current = session;
    transport.onclose = () => sessions.remove(id);
    sessions.add(session);
    session.holdStream(res);
    await server.connect(transport);
  }

  async function sseMessage(req: Req, res: Res, trace: TraceNode | undefined): Promise<void> {
    if (req.method !== "POST") throw new Refusal(405, SERVER_ERROR, `method ${req.method ?? ""} is not allowed on ${MCP_MESSAGES_PATH}; use POST`, { allow: "POST" });
    const sid = new URL(req.url ?? "/", "http://gateway").searchParams.get("sid") ?? "";
    const parsed = await readMessages(req);
    const caller = await callerOf(req, trace);
    const session = sessions.find(sid, caller.owner);
    if (!session || session.transportKind !== "sse") throw notFound();
    session.seen(caller, requestIds(parsed.messages));
    const transport = session.transport as SSEServerTransport;
    // The SSE transport takes one message per post.
    if (parsed.messages.length !== 1) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: the SSE transport takes one message per POST, not a batch");
    await transport.handlePostMessage(req as IncomingMessage, res as ServerResponse, parsed.messages[0]);
  }

  function fail(req: Req, res: Res, err: unknown): void {
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
    opts.logger.error({ err }, "the MCP endpoint failed");
    if (!res.headersSent) sendRpcError(res, 500, SERVER_ERROR, "internal error: the gateway log has the details");
    else res.end();
  }

  return {
    handle(req, res, path, trace) {
      const run = path === MCP_SSE_PATH ? sseStream : path === MCP_MESSAGES_PATH ? sseMessage : streamable;
      run(req, res, trace).catch((err: unknown) => fail(req, res, err));
    },
    close: () => sessions.closeAll(),
  };
}
