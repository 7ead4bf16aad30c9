/**
 * /mcp/<client>: one upstream MCP server's whole surface under its own names, and /mcp/<name> of a
 * virtual MCP server (relay-targets.ts): Streamable HTTP at /mcp/<name> (POST, GET stream, DELETE;
 * sessions by Mcp-Session-Id) and the legacy HTTP+SSE transport at /mcp/<name>/sse + /mcp/<name>/messages.
 * What the caller may use is checked on every request (a name it may not use is as unknown as a missing
 * one: 404); tools are narrowed to the caller's per request. Sessions answer only the caller that opened
 * them, on the path they were opened on.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { isInitializeRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { headerValue } from "../../http-headers.js";
import { RelayUpstreams } from "../../mcp/relay/relay-upstreams.js";
import type { VirtualServers } from "../../mcp/relay/virtual-servers.js";
import type { McpRuntime } from "../../mcp/runtime.js";
import type { McpCaller } from "../../services/mcp-server-tools.js";
import type { Logger } from "../../telemetry/logger.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { Req, Res } from "../node-http.js";
import { checkSessionStart, failMcpRequest, idInUse, INVALID_REQUEST, methodRefused, readMessages, Refusal, reusedRequestId, SERVER_ERROR, SESSION_HEADER, sessionNotFound, sessionsFull } from "./mcp-http.js";
import { newSessionId, type McpSessionLimits } from "./mcp-sessions.js";
import { RelayHttpTransport } from "./relay-http-transport.js";
import { RelayEntry, RelaySessions } from "./relay-sessions.js";
import { RelayTargets, type RelayTarget } from "./relay-targets.js";

/** What the relay endpoint needs. */
export interface RelayEndpointOptions {
  runtime: Pick<McpRuntime, "relaySource" | "everyRelaySource">;
  /** The virtual MCP servers, served at /mcp/<name> like clients. */
  virtualServers: Pick<VirtualServers, "get" | "member" | "onChange">;
  /** The gateway's version, announced by virtual servers with several members. */
  version: string;
  callerOf: (req: Req, trace: TraceNode | undefined) => Promise<McpCaller>;
  logger: Logger;
  maxBodyBytes: number;
  limits: McpSessionLimits;
  /** Whether one more session fits in the gateway's budget of MCP sessions (shared with /mcp). */
  hasRoom: () => boolean;
  /** Calls its listener after anything that may change what some caller may use (keys, settings, tools); returns the unsubscribe. */
  onAccessChanged(listener: () => void): () => void;
}

/** The relay endpoint. */
export interface RelayEndpoint {
  /** Serves one request on a path under /mcp/ other than /mcp/sse and /mcp/messages; `trace` is its SERVER span when the request is traced. */
  handle(req: Req, res: Res, path: string, trace: TraceNode | undefined): void;
  /** Live relayed sessions. */
  readonly size: number;
  /** The clients behind /mcp's prompts, resources, completion and logging for a session's opener (relay-targets.ts). */
  aggregate: RelayTargets["aggregate"];
  close(): Promise<void>;
}

/** The last part of a relay path: the Streamable HTTP endpoint, the SSE stream or the SSE message post. */
export type RelayLeaf = "" | "sse" | "messages";

/** Client names are letters, digits and underscores, at most 64. */
const CLIENT_NAME = /^[A-Za-z0-9_]{1,64}$/;
const PREFIX = "/mcp/";

/** The client and leaf of /mcp/<client>, /mcp/<client>/sse or /mcp/<client>/messages; null for any other path. */
export function relayPathOf(path: string): { client: string; leaf: RelayLeaf } | null {
  if (!path.startsWith(PREFIX)) return null;
  const parts = path.slice(PREFIX.length).split("/");
  const client = parts[0] ?? "";
  if (!CLIENT_NAME.test(client) || parts.length > 2) return null;
  const leaf = parts[1] ?? "";
  return leaf === "" || leaf === "sse" || leaf === "messages" ? { client, leaf } : null;
}

/**
 * The ids of the requests whose handlers read their caller, which is every request but initialize and ping
 * (the messages are checked JSON-RPC already): a tool list depends on its own request's headers, and a
 * request's span hangs under its own HTTP request's.
 */
function callerRequestIds(messages: readonly unknown[]): RequestId[] {
  const ids: RequestId[] = [];
  for (const message of messages) {
    const { method, id } = message as { method?: unknown; id?: RequestId };
    if (typeof method === "string" && method !== "initialize" && method !== "ping" && id !== undefined) ids.push(id);
  }
  return ids;
}

/** Builds the relay endpoint and its session table. */
export function createRelayEndpoint(opts: RelayEndpointOptions): RelayEndpoint {
  const sessions = new RelaySessions(opts.logger, opts.limits.idleTimeoutMs);
  const upstreams = new RelayUpstreams(opts.logger);
  const exists = (name: string): boolean => opts.runtime.relaySource(name) !== undefined || opts.virtualServers.get(name) !== undefined;
  // Changes come in bursts (a config reload touches many keys): one announcement per turn of the event loop.
  let announcing = false;
  const unwatchAccess = opts.onAccessChanged(() => {
    if (announcing) return;
    announcing = true;
    setImmediate(() => {
      announcing = false;
      sessions.closeGone(exists);
      sessions.listsChanged(null);
    });
  });
  const unwatchServers = opts.virtualServers.onChange((name) => {
    sessions.closeGone(exists);
    sessions.listsChanged(name);
  });

  function unknownPath(path: string): Refusal {
    return new Refusal(404, SERVER_ERROR, `no MCP endpoint at ${path}: the paths of one MCP server are /mcp/<name>, /mcp/<name>/sse and /mcp/<name>/messages, where <name> is an MCP client or a virtual MCP server`);
  }

  const targets = new RelayTargets({ runtime: opts.runtime, virtualServers: opts.virtualServers, upstreams, logger: opts.logger, version: opts.version });

  /** A new session on `target`, bound to its table entry once that exists. */
  function newRelay(target: RelayTarget, caller: McpCaller, ref: { current?: RelayEntry }) {
    return target.open(caller, {
      callerOf: (id) => ref.current?.callerOf(id) ?? caller,
      onClose: () => {
        if (ref.current !== undefined) sessions.remove(ref.current.id);
      },
    });
  }

  /** Checks that a new session may open on the target. */
  function admit(target: RelayTarget): void {
    target.admit();
    if (!opts.hasRoom()) throw sessionsFull(opts.limits.maxSessions);
  }

  async function streamable(req: Req, res: Res, name: string, trace: TraceNode | undefined): Promise<void> {
    const method = req.method ?? "GET";
    if (method !== "POST" && method !== "GET" && method !== "DELETE") throw methodRefused(method, `/mcp/${name}`, "POST, GET, DELETE");
    const parsed = method === "POST" ? await readMessages(req, opts.maxBodyBytes) : null;
    const caller = await opts.callerOf(req, trace);
    const target = targets.resolve(name, caller);
    const sessionId = headerValue(req.headers, SESSION_HEADER);
    if (sessionId !== undefined) {
      const entry = sessions.find(sessionId, caller.owner, name);
      if (entry === undefined || entry.downstream.kind !== "streamable_http") throw sessionNotFound();
      const transport = entry.downstream.transport;
      if (method === "DELETE") {
        await transport.handleDelete(req.headers, res as ServerResponse);
        return;
      }
      // Refused before it is seen: the request in flight under that id keeps its caller and its POST.
      const reused = parsed === null ? undefined : reusedRequestId(parsed.messages, (id) => transport.inFlight(id));
      if (reused !== undefined) throw idInUse(reused);
      entry.seen(caller, parsed ? callerRequestIds(parsed.messages) : []);
      if (parsed === null) {
        transport.handleGet(req.headers, res as ServerResponse);
        entry.holdStream(res);
        return;
      }
      transport.handlePost(req.headers, res as ServerResponse, parsed.body);
      return;
    }
    checkSessionStart(parsed);
    // Only an initialize request gets an answer to carry the session id: a notification is taken and
    // dropped, opening nothing, as /mcp answers it.
    if (!parsed.messages.some((m) => isInitializeRequest(m) && (m as { id?: unknown }).id !== undefined)) {
      (res as ServerResponse).writeHead(202);
      (res as ServerResponse).end();
      return;
    }
    admit(target);
    const ref: { current?: RelayEntry } = {};
    const relay = newRelay(target, caller, ref);
    const transport = new RelayHttpTransport(newSessionId());
    // A client that drops a POST gives up what it asked there; the upstream is told.
    transport.onabandon = (ids) => relay.abandon(ids);
    ref.current = new RelayEntry(transport.sessionId, name, { kind: "streamable_http", transport }, caller.owner, relay, caller);
    sessions.add(ref.current);
    await relay.connect(transport);
    // An initialize that failed upstream leaves a session no client will use: it goes once the answer is out.
    res.once("close", () => {
      if (relay.failedToInitialize) void relay.close();
    });
    try {
      transport.handlePost(req.headers, res as ServerResponse, parsed.body);
    } catch (err) {
      await relay.close();
      throw err;
    }
  }

  async function sseStream(req: Req, res: Res, name: string, trace: TraceNode | undefined): Promise<void> {
    if (req.method !== "GET") throw methodRefused(req.method, `/mcp/${name}/sse`, "GET");
    const caller = await opts.callerOf(req, trace);
    const target = targets.resolve(name, caller);
    admit(target);
    const { SSEServerTransport } = await import("@modelcontextprotocol/sdk/server/sse.js");
    const id = newSessionId();
    const ref: { current?: RelayEntry } = {};
    const relay = newRelay(target, caller, ref);
    // The session travels in our own `sid` parameter (256 random bits); the SDK adds its own sessionId next to it.
    const transport = new SSEServerTransport(`/mcp/${name}/messages?sid=${id}`, res as ServerResponse);
    ref.current = new RelayEntry(id, name, { kind: "sse", transport }, caller.owner, relay, caller);
    sessions.add(ref.current);
    ref.current.holdStream(res);
    await relay.connect(transport);
  }

  async function sseMessage(req: Req, res: Res, name: string, trace: TraceNode | undefined): Promise<void> {
    if (req.method !== "POST") throw methodRefused(req.method, `/mcp/${name}/messages`, "POST");
    const sid = new URL(req.url ?? "/", "http://gateway").searchParams.get("sid") ?? "";
    const parsed = await readMessages(req, opts.maxBodyBytes);
    const caller = await opts.callerOf(req, trace);
    targets.resolve(name, caller);
    const entry = sessions.find(sid, caller.owner, name);
    if (entry === undefined || entry.downstream.kind !== "sse") throw sessionNotFound();
    // The SSE transport takes one message per post.
    if (parsed.messages.length !== 1) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: the SSE transport takes one message per POST, not a batch");
    entry.seen(caller, callerRequestIds(parsed.messages));
    await entry.downstream.transport.handlePostMessage(req as IncomingMessage, res as ServerResponse, parsed.messages[0]);
  }

  return {
    handle(req, res, path, trace) {
      const where = relayPathOf(path);
      const run = where === null ? null : where.leaf === "" ? streamable : where.leaf === "sse" ? sseStream : sseMessage;
      const served = where === null || run === null ? Promise.reject(unknownPath(path)) : run(req, res, where.client, trace);
      served.catch((err: unknown) => failMcpRequest(opts.logger, req, res, err));
    },
    get size() {
      return sessions.size;
    },
    aggregate: (opener, callerOf) => targets.aggregate(opener, callerOf),
    close: () => {
      unwatchAccess();
      unwatchServers();
      return sessions.closeAll();
    },
  };
}
