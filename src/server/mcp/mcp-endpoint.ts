/**
 * The gateway as an MCP server on its one port: Streamable HTTP at /mcp (POST, GET stream, DELETE;
 * sessions by Mcp-Session-Id) and the legacy HTTP+SSE transport at /mcp/sse + /mcp/messages. Bodies are
 * read here within the gateway's size limit and checked as JSON-RPC before the SDK transport sees them;
 * every request resolves its caller, and a session answers only the caller that opened it. The paths of
 * one upstream server, /mcp/<client>, and of virtual servers, /mcp/<name>, go to the relay endpoint.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isJSONRPCRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { McpRuntime } from "../../mcp/runtime.js";
import type { VirtualServers } from "../../mcp/relay/virtual-servers.js";
import type { McpCaller, McpServerTools } from "../../services/mcp-server-tools.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { Logger } from "../../telemetry/logger.js";
import type { Req, Res } from "../node-http.js";
import { AGGREGATED_METHODS } from "./aggregate-relay.js";
import { createGatewayMcpServer } from "./gateway-mcp-server.js";
import { DEFAULT_SESSION_LIMITS, McpSession, McpSessions, newSessionId, toolSignature, type McpSessionLimits } from "./mcp-sessions.js";
import { headerValue } from "../../http-headers.js";
import { checkSessionStart, createCallerResolver, failMcpRequest, idInUse, INVALID_REQUEST, methodRefused, readMessages, Refusal, reusedRequestId, SESSION_HEADER, sessionNotFound, sessionsFull, type McpOAuth } from "./mcp-http.js";
import { createRelayEndpoint, relayPathOf } from "./relay-endpoint.js";

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

/** True for every path the MCP endpoint serves: /mcp, its legacy SSE paths and the paths of one server. */
export function isMcpPath(path: string): boolean {
  return path === MCP_PATH || path.startsWith(`${MCP_PATH}/`);
}

/** The route label of an MCP path: the path itself, or a template for the paths of one server (never a client name). */
export function mcpRouteOf(path: string): string {
  if (path === MCP_PATH || path === MCP_SSE_PATH || path === MCP_MESSAGES_PATH) return path;
  const relay = relayPathOf(path);
  if (relay === null) return "unmatched";
  return relay.leaf === "" ? `${MCP_PATH}/{client}` : `${MCP_PATH}/{client}/${relay.leaf}`;
}

/** What the endpoint needs. */
export interface McpEndpointOptions {
  tools: McpServerTools;
  logger: Logger;
  version: string;
  maxBodyBytes: number;
  limits?: Partial<McpSessionLimits>;
  /** OAuth access tokens on /mcp (client.mcp_server_auth_mode `both` or `oauth`); absent: headers only. */
  oauth?: McpOAuth;
  /** The runtime /mcp/<client> reaches each client through. */
  runtime: McpRuntime;
  /** The virtual MCP servers served at /mcp/<name>. */
  virtualServers: VirtualServers;
}

/** The endpoint: `handle` serves every MCP path, `close` ends every session. */
export interface McpEndpoint {
  /** Serves one request; `trace` is its SERVER span when the request is traced. */
  handle(req: Req, res: Res, path: string, trace?: TraceNode): void;
  close(): Promise<void>;
}

/** Builds the endpoint and its session table. */
export function createMcpEndpoint(opts: McpEndpointOptions): McpEndpoint {
  const limits = { ...DEFAULT_SESSION_LIMITS, ...opts.limits };
  const sessions = new McpSessions(opts.tools, opts.logger, limits);

  const callerOf = createCallerResolver(opts.tools, opts.oauth);
  // One budget of sessions for /mcp and the paths of every server.
  const hasRoom = () => sessions.size + relay.size < limits.maxSessions;
  const relay = createRelayEndpoint({
    runtime: opts.runtime,
    virtualServers: opts.virtualServers,
    version: opts.version,
    callerOf,
    logger: opts.logger,
    maxBodyBytes: opts.maxBodyBytes,
    limits,
    hasRoom,
    onAccessChanged: (listener) => opts.tools.onToolsChanged(listener),
  });

  /** The ids of the requests whose handlers read their caller (only those take the entry back out). */
  function requestIds(messages: readonly unknown[]): RequestId[] {
    return messages.filter(isJSONRPCRequest).filter((m) => m.method === "tools/list" || m.method === "tools/call" || AGGREGATED_METHODS.has(m.method)).map((m) => m.id);
  }

  const notFound = sessionNotFound;
  const full = () => sessionsFull(limits.maxSessions);

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
      aggregate: () => relay.aggregate(sessionRef.current?.caller ?? caller, (id) => sessionRef.current?.callerOf(id) ?? caller),
    });
  }

  async function streamable(req: Req, res: Res, trace: TraceNode | undefined): Promise<void> {
    const method = req.method ?? "GET";
    if (method !== "POST" && method !== "GET" && method !== "DELETE") {
      throw methodRefused(method, MCP_PATH, "POST, GET, DELETE");
    }
    const parsed = method === "POST" ? await readMessages(req, opts.maxBodyBytes) : null;
    const caller = await callerOf(req, trace);
    const sessionId = headerValue(req.headers, SESSION_HEADER);
    const nodeReq = req as IncomingMessage;
    const nodeRes = res as ServerResponse;
    if (sessionId !== undefined) {
      const session = sessions.find(sessionId, caller.owner);
      if (!session) throw notFound();
      if (parsed !== null && session.transportKind === "streamable_http") {
        // Refused before it is seen: the request in flight under that id keeps its caller and its POST.
        const reused = reusedRequestId(parsed.messages, (id) => session.inFlight(id));
        if (reused !== undefined) throw idInUse(reused);
      }
      session.seen(caller, parsed ? requestIds(parsed.messages) : []);
      if (method === "GET") session.holdStream(res);
      await (session.transport as StreamableHTTPServerTransport).handleRequest(nodeReq, nodeRes, parsed?.body);
      return;
    }
    checkSessionStart(parsed);
    if (!hasRoom()) throw full();
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
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      const answered = "id" in message && ("result" in message || "error" in message) ? message.id : undefined;
      return send(message, options).finally(() => {
        if (answered !== undefined) ref.current?.answered(answered);
      });
    };
    await server.connect(transport);
    // Recorded as the transport hands them on, so a POST it refused (bad headers) leaves no id behind.
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      ref.current?.received([message]);
      deliver?.(message, extra);
    };
    await transport.handleRequest(nodeReq, nodeRes, parsed.body);
    // An initialize the SDK refused opened no session: nothing is left to keep.
    if (ref.current === undefined) await server.close();
  }

  async function sseStream(req: Req, res: Res, trace: TraceNode | undefined): Promise<void> {
    if (req.method !== "GET") throw methodRefused(req.method, MCP_SSE_PATH, "GET");
    const caller = await callerOf(req, trace);
    const { SSEServerTransport } = await loadSseTransport();
    if (!hasRoom()) throw full();
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
    if (req.method !== "POST") throw methodRefused(req.method, MCP_MESSAGES_PATH, "POST");
    const sid = new URL(req.url ?? "/", "http://gateway").searchParams.get("sid") ?? "";
    const parsed = await readMessages(req, opts.maxBodyBytes);
    const caller = await callerOf(req, trace);
    const session = sessions.find(sid, caller.owner);
    if (!session || session.transportKind !== "sse") throw notFound();
    session.seen(caller, requestIds(parsed.messages));
    const transport = session.transport as SSEServerTransport;
    // The SSE transport takes one message per post.
    if (parsed.messages.length !== 1) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: the SSE transport takes one message per POST, not a batch");
    await transport.handlePostMessage(req as IncomingMessage, res as ServerResponse, parsed.messages[0]);
  }

  return {
    handle(req, res, path, trace) {
      const run = path === MCP_PATH ? streamable : path === MCP_SSE_PATH ? sseStream : path === MCP_MESSAGES_PATH ? sseMessage : null;
      if (run === null) {
        relay.handle(req, res, path, trace);
        return;
      }
      run(req, res, trace).catch((err: unknown) => failMcpRequest(opts.logger, req, res, err));
    },
    close: async () => {
      await Promise.all([sessions.closeAll(), relay.close()]);
    },
  };
}
