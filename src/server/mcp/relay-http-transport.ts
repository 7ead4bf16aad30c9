/**
 * The Streamable HTTP transport of one /mcp/<client> session, written on Node's request and response
 * (the SDK's server transport adapts them to web streams, which costs a relayed call most of its time).
 * A POST of requests is answered with one JSON body when nothing but the answers goes back on it, and
 * turns into an SSE stream the moment a notification or server-to-client request tied to one of its
 * requests must go first; both are what clients must accept. GET opens the session's own stream, DELETE
 * ends the session. Bodies arrive parsed and checked: the endpoint reads them within the size limit.
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { INVALID_REQUEST, Refusal, SERVER_ERROR, SESSION_HEADER } from "./mcp-http.js";

/**
 * A response of either server (HTTP/1.1 or h2c), used through what both have in common; typed as the
 * HTTP/1.1 one, whose write and end overloads TypeScript can call.
 */
type Res = ServerResponse;

/** The answers still owed on one POST. */
interface Exchange {
  res: Res;
  /** Request ids not answered yet. */
  owed: Set<RequestId>;
  /** Answers held for a JSON body, in order. */
  answers: JSONRPCMessage[];
  batch: boolean;
  /** True once the POST's answer became an SSE stream. */
  streaming: boolean;
  finished: boolean;
}

/*
 * Messages here are already checked JSON-RPC (the endpoint's reading, the SDK's Protocol for what goes out),
 * so their kind is told by their keys rather than by the SDK's schema guards, which parse the whole message.
 */
function isRequest(message: JSONRPCMessage): message is JSONRPCRequest {
  return "method" in message && "id" in message;
}

function isAnswer(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return "id" in message && ("result" in message || "error" in message);
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" };

function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

function accepts(headers: IncomingHttpHeaders, type: string): boolean {
  const accept = headers.accept;
  return typeof accept === "string" && (accept.includes(type) || accept.includes("*/*"));
}

/** A session's transport; the endpoint hands it each request of the session. */
export class RelayHttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: { requestInfo?: { headers: IncomingHttpHeaders } }) => void;
  /** Called with the requests of a POST whose client went away before they were answered. */
  onabandon?: (requestIds: RequestId[]) => void;
  private readonly exchanges = new Map<RequestId, Exchange>();
  private standalone: Res | undefined;
  private initialized = false;
  /** The initialize request's id, until its answer is sent. */
  private initializeId: RequestId | undefined;
  /** The initialize was answered with an error: the session will not be used, so no answer names it. */
  private initializeFailed = false;
  private closed = false;

  constructor(readonly sessionId: string) {}

  async start(): Promise<void> {}

  /** Serves a POST of parsed, checked JSON-RPC messages; refusals are thrown as Refusal. */
  handlePost(headers: IncomingHttpHeaders, res: Res, body: unknown): void {
    if (!accepts(headers, "application/json") || !accepts(headers, "text/event-stream")) {
      throw new Refusal(406, SERVER_ERROR, "Not Acceptable: the client must accept both application/json and text/event-stream");
    }
    const batch = Array.isArray(body);
    const messages = (batch ? body : [body]) as JSONRPCMessage[];
    const initializing = messages.some((m) => isRequest(m) && m.method === "initialize");
    if (initializing) {
      if (this.initialized) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: the session is already initialized");
      if (messages.length > 1) throw new Refusal(400, INVALID_REQUEST, "Invalid Request: initialize must be sent alone");
      this.initialized = true;
      this.initializeId = (messages[0] as { id: RequestId }).id;
    } else {
      this.checkVersion(headers);
    }
    const requests = messages.filter(isRequest);
    const extra = { requestInfo: { headers } };
    if (requests.length === 0) {
      res.writeHead(202, { [SESSION_HEADER]: this.sessionId });
      res.end();
      for (const message of messages) this.onmessage?.(message, extra);
      return;
    }
    const exchange: Exchange = { res, owed: new Set(requests.map((r) => r.id)), answers: [], batch, streaming: false, finished: false };
    for (const id of exchange.owed) this.exchanges.set(id, exchange);
    res.once("close", () => {
      if (exchange.finished) return;
      exchange.finished = true;
      const owed = [...exchange.owed];
      for (const id of owed) this.exchanges.delete(id);
      if (owed.length > 0) this.onabandon?.(owed);
    });
    for (const message of messages) this.onmessage?.(message, extra);
  }

  /** True while the request of this id waits for its answer on a POST of the session. */
  inFlight(id: RequestId): boolean {
    return this.exchanges.has(id);
  }

  /** Serves a GET: the session's own stream, one at a time. */
  handleGet(headers: IncomingHttpHeaders, res: Res): void {
    if (!accepts(headers, "text/event-stream")) throw new Refusal(406, SERVER_ERROR, "Not Acceptable: the client must accept text/event-stream");
    this.checkVersion(headers);
    if (this.standalone !== undefined) throw new Refusal(409, SERVER_ERROR, "Conflict: the session's stream is already open");
    res.writeHead(200, { ...SSE_HEADERS, [SESSION_HEADER]: this.sessionId });
    // A comment line sends the headers now on either server, so the client knows its stream is open.
    res.write(": open\n\n");
    this.standalone = res;
    res.once("close", () => {
      if (this.standalone === res) this.standalone = undefined;
    });
  }

  /** Serves a DELETE: the session ends. */
  async handleDelete(headers: IncomingHttpHeaders, res: Res): Promise<void> {
    this.checkVersion(headers);
    await this.close();
    res.writeHead(200);
    res.end();
  }

  private checkVersion(headers: IncomingHttpHeaders): void {
    const version = headers["mcp-protocol-version"];
    if (typeof version === "string" && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw new Refusal(400, SERVER_ERROR, `Bad Request: unsupported protocol version ${version} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`);
    }
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.closed) return;
    if (isAnswer(message)) {
      const exchange = this.exchanges.get(message.id);
      // Its client went away: there is no one to answer.
      if (exchange === undefined) return;
      this.exchanges.delete(message.id);
      exchange.owed.delete(message.id);
      if (message.id === this.initializeId) {
        this.initializeId = undefined;
        this.initializeFailed = "error" in message;
      }
      if (exchange.streaming) exchange.res.write(sseEvent(message));
      else exchange.answers.push(message);
      if (exchange.owed.size === 0) this.finish(exchange);
      return;
    }
    const related = options?.relatedRequestId === undefined ? undefined : this.exchanges.get(options.relatedRequestId);
    if (related !== undefined) {
      this.stream(related);
      related.res.write(sseEvent(message));
      return;
    }
    // Without a stream of its own open, the session has nowhere to hear it: the message is dropped.
    this.standalone?.write(sseEvent(message));
  }

  /** Turns a POST's answer into an SSE stream, answers held so far first. */
  private stream(exchange: Exchange): void {
    if (exchange.streaming) return;
    exchange.streaming = true;
    exchange.res.writeHead(200, { ...SSE_HEADERS, [SESSION_HEADER]: this.sessionId });
    for (const answer of exchange.answers.splice(0)) exchange.res.write(sseEvent(answer));
  }

  private finish(exchange: Exchange): void {
    exchange.finished = true;
    if (exchange.streaming) {
      exchange.res.end();
      return;
    }
    const body = JSON.stringify(exchange.batch ? exchange.answers : exchange.answers[0]);
    const session = this.initializeFailed ? {} : { [SESSION_HEADER]: this.sessionId };
    exchange.res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...session });
    exchange.res.end(body);
  }

  /** Ends the session: requests still owed an answer are told the session ended. */
  async close(): Promise<void> {
    if (this.closed) return;
    const owed = new Set(this.exchanges.values());
    for (const exchange of owed) {
      for (const id of exchange.owed) exchange.answers.push({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message: "the MCP session ended" } });
      exchange.owed.clear();
      if (exchange.streaming) for (const answer of exchange.answers.splice(0)) exchange.res.write(sseEvent(answer));
      this.finish(exchange);
    }
    this.exchanges.clear();
    this.closed = true;
    this.standalone?.end();
    this.standalone = undefined;
    this.onclose?.();
  }
}
