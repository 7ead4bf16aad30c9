/**
 * An upstream MCP server for the /mcp/<client> relay tests, written with the SDK's low-level Server so
 * every method is under the test's control: tools (paged four at a time), resources (paged two at a time),
 * a resource template, subscriptions, a prompt, completions, per-session log levels, and tools that ask the
 * client for sampling, elicitation and roots, report progress, wait to be cancelled, and flood the client
 * with sampling requests. Served over streamable HTTP (stateful, /mcp), the legacy SSE transport (/sse +
 * /messages) on 127.0.0.1 port 0, or stdio (relay-upstream-stdio.ts). What happened (cancellations,
 * failed server-to-client requests) is kept per process and read with the `stats` tool.
 */
import { randomUUID } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type LoggingLevel,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What the server's name, version and instructions are; the relay must pass them on. */
export const UPSTREAM_INFO = { name: "relay-upstream", version: "3.1.4" };
export const UPSTREAM_INSTRUCTIONS = "A test server: every tool, resource and prompt here is for the relay tests.";

const LEVELS: LoggingLevel[] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
/** Tools per tools/list page; resources per resources/list page. */
const TOOL_PAGE = 4;
const RESOURCE_PAGE = 2;
/** A 1x1 transparent PNG. */
const PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/** Calls that wait are cut short after this, so a forgotten one cannot keep a process alive. */
const WAIT_MAX_MS = 60_000;

const object = (properties: Record<string, object> = {}, required: string[] = []): Tool["inputSchema"] => ({ type: "object", properties, ...(required.length > 0 ? { required } : {}) });

/** Every tool, in listing order. */
export const TOOLS: Tool[] = [
  { name: "echo", description: "Echoes its text", inputSchema: object({ text: { type: "string" } }, ["text"]) },
  {
    name: "rich",
    description: "Every kind of content block, structured content and _meta",
    inputSchema: object(),
    outputSchema: object({ answer: { type: "number" } }, ["answer"]),
    annotations: { readOnlyHint: true, title: "Rich" },
    _meta: { "test/tool-meta": "kept" },
  },
  { name: "progress", description: "Reports `steps` progress notifications", inputSchema: object({ steps: { type: "number" } }, ["steps"]) },
  { name: "sample", description: "Asks the client to sample `prompt`", inputSchema: object({ prompt: { type: "string" } }, ["prompt"]) },
  { name: "elicit_form", description: "Asks the client for a colour (form mode)", inputSchema: object() },
  { name: "elicit_url", description: "Sends the user to a URL (URL mode)", inputSchema: object() },
  { name: "roots", description: "Lists the client's roots", inputSchema: object() },
  { name: "wait", description: "Waits until cancelled", inputSchema: object() },
  { name: "log", description: "Logs `text` at `level`", inputSchema: object({ level: { type: "string" }, text: { type: "string" } }, ["level", "text"]) },
  { name: "touch", description: "Announces an update of `uri` to its subscribers", inputSchema: object({ uri: { type: "string" } }, ["uri"]) },
  { name: "announce", description: "Announces changed tool, resource and prompt lists", inputSchema: object() },
  { name: "flood", description: "Sends `count` sampling requests at once", inputSchema: object({ count: { type: "number" }, refusals: { type: "number" } }, ["count", "refusals"]) },
  { name: "stats", description: "What this process saw", inputSchema: object() },
  { name: "secret", description: "A tool the gateway does not let callers use", inputSchema: object() },
];

const RESOURCES = [
  { uri: "test://static/hello", name: "hello", mimeType: "text/plain", _meta: { "test/resource-meta": 1 } },
  { uri: "test://static/pixel", name: "pixel", mimeType: "image/png" },
  { uri: "test://doc/readme", name: "readme", mimeType: "text/markdown", annotations: { audience: ["user" as const], priority: 0.9 } },
];

/** What one process saw, across its sessions. */
export interface UpstreamStats {
  /** `wait` calls running now. */
  waiting: number;
  /** `wait` calls ended by a cancellation. */
  cancelled: number;
  /** Server-to-client requests that failed, as "<method> <code>". */
  failures: string[];
}

/** The state every session of one process shares. */
export class UpstreamState {
  readonly stats: UpstreamStats = { waiting: 0, cancelled: 0, failures: [] };
  /** uri -> the sessions subscribed to it. */
  readonly subscribers = new Map<string, Set<Server>>();
  readonly servers = new Set<Server>();
}

function text(value: string): CallToolResult {
  return { content: [{ type: "text", text: value }] };
}

function failure(method: string, err: unknown): string {
  return `${method} ${err instanceof McpError ? err.code : "?"}`;
}

/** One session's server. */
export function createRelayUpstream(state: UpstreamState): Server {
  const server = new Server(UPSTREAM_INFO, {
    capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, completions: {}, logging: {} },
    instructions: UPSTREAM_INSTRUCTIONS,
  });
  let level: LoggingLevel | null = null;
  state.servers.add(server);
  server.onclose = () => {
    state.servers.delete(server);
    for (const set of state.subscribers.values()) set.delete(server);
  };

  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const start = Number(request.params?.cursor ?? "0");
    const page = TOOLS.slice(start, start + TOOL_PAGE);
    const next = start + TOOL_PAGE;
    return { tools: page, ...(next < TOOLS.length ? { nextCursor: String(next) } : {}) };
  });

  server.setRequestHandler(ListResourcesRequestSchema, (request) => {
    const start = Number((request.params?.cursor ?? "r0").slice(1));
    const next = start + RESOURCE_PAGE;
    return { resources: RESOURCES.slice(start, next), ...(next < RESOURCES.length ? { nextCursor: `r${next}` } : {}) };
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [{ uriTemplate: "test://doc/{name}", name: "doc", mimeType: "text/markdown" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    const { uri } = request.params;
    if (uri === "test://static/hello") return { contents: [{ uri, mimeType: "text/plain", text: "hello, world", _meta: { "test/content-meta": true } }] };
    if (uri === "test://static/pixel") return { contents: [{ uri, mimeType: "image/png", blob: PIXEL_PNG }] };
    if (uri.startsWith("test://doc/")) return { contents: [{ uri, mimeType: "text/markdown", text: `# ${uri.slice("test://doc/".length)}` }] };
    // A plain error with a code: the SDK sends its message as it is (an McpError's carries a prefix).
    throw Object.assign(new Error(`Resource not found: ${uri}`), { code: -32002, data: { uri } });
  });
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    const set = state.subscribers.get(request.params.uri) ?? new Set<Server>();
    set.add(server);
    state.subscribers.set(request.params.uri, set);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    state.subscribers.get(request.params.uri)?.delete(server);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: [{ name: "greet", description: "Greets someone", arguments: [{ name: "name", description: "Who", required: true }] }],
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    if (request.params.name !== "greet") throw new McpError(-32602, `Unknown prompt: ${request.params.name}`);
    return { description: "A greeting", messages: [{ role: "user", content: { type: "text", text: `Hello, ${request.params.arguments?.["name"] ?? "nobody"}!` } }] };
  });
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const names = ["alice", "albert", "bob"];
    const values = names.filter((name) => name.startsWith(request.params.argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    level = request.params.level;
    return {};
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case "echo":
        return text(String(args["text"]));
      case "rich":
        return {
          content: [
            { type: "text", text: "caption", annotations: { audience: ["user"], priority: 0.5 } },
            { type: "image", data: PIXEL_PNG, mimeType: "image/png" },
            { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
            { type: "resource", resource: { uri: "test://static/hello", mimeType: "text/plain", text: "hello, world" } },
            { type: "resource_link", uri: "test://doc/readme", name: "readme", mimeType: "text/markdown" },
          ],
          structuredContent: { answer: 42 },
          _meta: { "test/result-meta": "kept" },
        };
      case "progress":
        return progress(Number(args["steps"]), extra);
      case "sample":
        return sample(String(args["prompt"]), extra, state);
      case "elicit_form":
        return ask(
          { method: "elicitation/create", params: { message: "Pick a colour", requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] } } },
          extra,
          state,
        );
      case "elicit_url":
        return ask({ method: "elicitation/create", params: { mode: "url", message: "Sign in", url: "https://example.test/consent", elicitationId: randomUUID() } }, extra, state);
      case "roots":
        try {
          return text(JSON.stringify(await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema)));
        } catch (err) {
          state.stats.failures.push(failure("roots/list", err));
          return { ...text(`roots/list failed: ${err instanceof Error ? err.message : String(err)}`), isError: true };
        }
      case "wait":
        return wait(extra, state);
      case "log": {
        const wanted = String(args["level"]) as LoggingLevel;
        if (level === null || LEVELS.indexOf(wanted) >= LEVELS.indexOf(level)) {
          await extra.sendNotification({ method: "notifications/message", params: { level: wanted, logger: "relay-upstream", data: String(args["text"]) } });
        }
        return text("logged");
      }
      case "touch": {
        const uri = String(args["uri"]);
        await Promise.all([...(state.subscribers.get(uri) ?? [])].map((subscriber) => subscriber.sendResourceUpdated({ uri })));
        return text("touched");
      }
      case "announce":
        await Promise.all([server.sendToolListChanged(), server.sendResourceListChanged(), server.sendPromptListChanged()]);
        return text("announced");
      case "flood":
        return flood(Number(args["count"]), Number(args["refusals"]), extra, state);
      case "stats":
        return text(JSON.stringify(state.stats));
      case "secret":
        return text("the secret");
      default:
        throw new McpError(-32602, `Unknown tool: ${request.params.name}`);
    }
  });
  return server;
}

async function progress(steps: number, extra: Extra): Promise<CallToolResult> {
  const token = extra._meta?.progressToken;
  if (token === undefined) return { ...text("no progress token was sent"), isError: true };
  for (let step = 1; step <= steps; step++) {
    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: step, total: steps, message: `step ${step}` } });
  }
  return text(`progressed with token ${String(token)}`);
}

async function sample(prompt: string, extra: Extra, state: UpstreamState): Promise<CallToolResult> {
  try {
    const result = await extra.sendRequest(
      { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 20 } },
      CreateMessageResultSchema,
      { timeout: WAIT_MAX_MS },
    );
    return text(result.content.type === "text" ? result.content.text : JSON.stringify(result.content));
  } catch (err) {
    state.stats.failures.push(failure("sampling/createMessage", err));
    return { ...text(`sampling failed: ${failure("sampling/createMessage", err)} ${err instanceof Error ? err.message : String(err)}`), isError: true };
  }
}

async function ask(request: ServerRequest, extra: Extra, state: UpstreamState): Promise<CallToolResult> {
  try {
    return text(JSON.stringify(await extra.sendRequest(request, ElicitResultSchema, { timeout: WAIT_MAX_MS })));
  } catch (err) {
    state.stats.failures.push(failure(request.method, err));
    return { ...text(`${request.method} failed: ${failure(request.method, err)}`), isError: true };
  }
}

async function wait(extra: Extra, state: UpstreamState): Promise<CallToolResult> {
  state.stats.waiting++;
  try {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, WAIT_MAX_MS);
      timer.unref();
      extra.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    state.stats.waiting--;
  }
  if (extra.signal.aborted) state.stats.cancelled++;
  return text(extra.signal.aborted ? "cancelled" : "never cancelled");
}

/**
 * Sends `count` sampling requests at once. Once `refusals` of them have failed it says so in a progress
 * notification (the test answers the others only then), and reports every outcome.
 */
async function flood(count: number, refusals: number, extra: Extra, state: UpstreamState): Promise<CallToolResult> {
  const token = extra._meta?.progressToken;
  const refused: string[] = [];
  let told = false;
  const tell = async () => {
    if (told || refused.length < refusals || token === undefined) return;
    told = true;
    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: refused.length, message: `refused ${refused.length}` } });
  };
  const outcomes = await Promise.all(
    Array.from({ length: count }, () =>
      extra
        .sendRequest({ method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "flood" } }], maxTokens: 1 } }, CreateMessageResultSchema, { timeout: WAIT_MAX_MS })
        .then(
          () => "ok",
          async (err: unknown) => {
            const outcome = failure("sampling/createMessage", err);
            refused.push(outcome);
            state.stats.failures.push(outcome);
            await tell();
            return outcome;
          },
        ),
    ),
  );
  return text(JSON.stringify({ ok: outcomes.filter((o) => o === "ok").length, refused }));
}

/** A running http + sse upstream. */
export interface RelayUpstreamListener {
  /** Streamable HTTP endpoint. */
  readonly httpUrl: string;
  /** Legacy SSE endpoint. */
  readonly sseUrl: string;
  readonly state: UpstreamState;
  /** Streamable HTTP sessions open now. */
  readonly httpSessions: number;
  close(): Promise<void>;
}

/** Serves the upstream over streamable HTTP and SSE on 127.0.0.1, port 0. */
export async function startRelayUpstream(): Promise<RelayUpstreamListener> {
  const state = new UpstreamState();
  const httpSessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();
  const sockets = new Set<Socket>();
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    void (async () => {
      if (path === "/mcp") {
        const id = req.headers["mcp-session-id"];
        const known = typeof id === "string" ? httpSessions.get(id) : undefined;
        if (known) {
          await known.handleRequest(req, res);
          return;
        }
        if (req.method !== "POST") {
          res.writeHead(404).end("unknown session");
          return;
        }
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (!isInitializeRequest(body)) {
          res.writeHead(400).end("initialize first");
          return;
        }
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void httpSessions.set(sid, transport),
          onsessionclosed: (sid) => void httpSessions.delete(sid),
        });
        const server = createRelayUpstream(state);
        transport.onclose = () => {
          if (transport.sessionId !== undefined) httpSessions.delete(transport.sessionId);
          void server.close();
        };
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
        return;
      }
      if (path === "/sse" && req.method === "GET") {
        const transport = new SSEServerTransport("/messages", res);
        const server = createRelayUpstream(state);
        sseSessions.set(transport.sessionId, transport);
        res.on("close", () => {
          sseSessions.delete(transport.sessionId);
          void server.close();
        });
        await server.connect(transport);
        return;
      }
      if (path === "/messages" && req.method === "POST") {
        const transport = sseSessions.get(new URL(req.url ?? "/", "http://x").searchParams.get("sessionId") ?? "");
        if (!transport) {
          res.writeHead(404).end("unknown session");
          return;
        }
        await transport.handlePostMessage(req, res);
        return;
      }
      res.writeHead(404).end();
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  httpServer.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  return {
    httpUrl: `${url}/mcp`,
    sseUrl: `${url}/sse`,
    state,
    get httpSessions() {
      return httpSessions.size;
    },
    async close() {
      await Promise.all([...httpSessions.values()].map((t) => t.close().catch(() => undefined)));
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
