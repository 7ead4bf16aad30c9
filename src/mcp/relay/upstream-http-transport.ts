/**
 * The streamable HTTP client transport of every upstream session (tool calls, discovery, the relay), on
 * undici's dispatcher (upstream-exchange.ts; the SDK's transport goes through fetch and web streams, which
 * cost a call more than everything else the gateway does for it). Redirects are not followed: a 3xx names
 * where it points, for the client's connection_string. It sends each message as a POST with the session's headers
 * (and OAuth token, renewed once on a 401), reads a JSON or SSE answer, keeps the session id and protocol
 * version, and holds the session's own GET stream for what the server sends unasked.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Dispatcher } from "undici";
import type { BearerSource } from "../oauth/bearer-fetch.js";
import { OversizedMessageError, oversizedAnswer } from "../message-bound.js";
import { UpstreamHttpStatusError } from "../upstream-errors.js";
import { UpstreamExchanges, type UpstreamAnswer } from "./upstream-exchange.js";

/** How many times in a row the GET stream is opened again after it ends, before the session counts as lost. */
const STREAM_RETRIES = 2;
const STREAM_RETRY_DELAY_MS = 1_000;

/** Where and how to reach the upstream. */
export interface UpstreamHttpOptions {
  url: URL;
  /** Sent on every request. */
  headers: Record<string, string>;
  /** The keep-alive pool every request goes through (it enforces the egress policy). */
  dispatcher: Dispatcher;
  bearer?: BearerSource;
}

/** A streamable HTTP client transport for one upstream session. */
export class UpstreamHttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  sessionId?: string;
  private protocolVersion: string | undefined;
  private readonly exchanges: UpstreamExchanges;
  private closed = false;

  constructor(private readonly options: UpstreamHttpOptions) {
    this.exchanges = new UpstreamExchanges(options.dispatcher, options.url);
  }

  async start(): Promise<void> {}

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { ...this.options.headers, ...extra };
    if (this.sessionId !== undefined) headers["mcp-session-id"] = this.sessionId;
    if (this.protocolVersion !== undefined) headers["mcp-protocol-version"] = this.protocolVersion;
    return headers;
  }

  /** One request, with the current token when the upstream takes OAuth. */
  private exchange(method: "POST" | "GET" | "DELETE", extra: Record<string, string>, body?: string): Promise<UpstreamAnswer> {
    const bearer = this.options.bearer;
    return bearer === undefined ? this.exchanges.send(method, this.headers(extra), body) : this.exchangeWithToken(bearer, method, extra, body);
  }

  /** One request with the current token; after a 401 the source renews it and the request is made once more. */
  private async exchangeWithToken(bearer: BearerSource, method: "POST" | "GET" | "DELETE", extra: Record<string, string>, body?: string): Promise<UpstreamAnswer> {
    for (let attempt = 0; ; attempt++) {
      const token = await bearer.token();
      const answer = await this.exchanges.send(method, this.headers({ ...extra, authorization: `Bearer ${token}` }), body);
      if (answer.statusCode !== 401 || attempt > 0) return answer;
      await answer.dump();
      await bearer.rejected(token);
    }
  }

  /** The error of an answer that is not a success, with its status for the runtime to act on. */
  private async failure(answer: UpstreamAnswer, what: string): Promise<UpstreamHttpStatusError> {
    const text = await answer.text().catch(() => "");
    const location = answer.statusCode >= 300 && answer.statusCode < 400 ? answer.header("location") : undefined;
    const hint =
      answer.statusCode === 404 && this.sessionId !== undefined
        ? " (the upstream no longer knows the session)"
        : location !== undefined
          ? ` (a redirect to ${location}, which is not followed: set the client's connection_string to where it points)`
          : "";
    return new UpstreamHttpStatusError(answer.statusCode, `Error ${what} (HTTP ${answer.statusCode})${hint}: ${text}`);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error("the upstream transport is closed");
    const answer = await this.exchange("POST", { "content-type": "application/json", accept: "application/json, text/event-stream" }, JSON.stringify(message));
    if (answer.statusCode >= 300) throw await this.failure(answer, "POSTing to endpoint");
    this.sessionId = answer.header("mcp-session-id") ?? this.sessionId;
    const type = answer.header("content-type") ?? "";
    if (type.startsWith("text/event-stream")) {
      void this.readEvents(answer).catch((err: unknown) => (err instanceof OversizedMessageError ? this.oversized(message) : this.fail(err)));
    } else if (type.startsWith("application/json")) {
      let text: string;
      try {
        text = await answer.text();
      } catch (err) {
        if (!(err instanceof OversizedMessageError)) throw err;
        this.oversized(message);
        return;
      }
      const data: unknown = JSON.parse(text);
      for (const item of Array.isArray(data) ? data : [data]) this.onmessage?.(item as JSONRPCMessage);
    } else {
      await answer.dump();
      // Nothing else carries the answer a request is owed: without failing it now it would wait out its timeout.
      if ("method" in message && "id" in message) throw new Error(`Unexpected content type: ${type === "" ? "none" : type}`);
    }
    if ((message as { method?: unknown }).method === "notifications/initialized") void this.holdStream(0);
  }

  /** The session's own stream: opened after initialization, opened again when it ends, given up after repeated failures. */
  private async holdStream(failures: number): Promise<void> {
    if (this.closed) return;
    try {
      const answer = await this.exchange("GET", { accept: "text/event-stream" });
      // A server with nothing to say unasked may offer no stream.
      if (answer.statusCode === 405) {
        await answer.dump();
        return;
      }
      if (answer.statusCode >= 300) throw await this.failure(answer, "opening the session's stream");
      await this.readEvents(answer);
      failures = 0;
    } catch (err) {
      if (this.closed) return;
      if (failures >= STREAM_RETRIES) {
        this.onerror?.(err instanceof Error ? err : new Error(String(err)));
        await this.close();
        return;
      }
      failures++;
    }
    if (this.closed) return;
    await new Promise((resolve) => setTimeout(resolve, STREAM_RETRY_DELAY_MS).unref());
    void this.holdStream(failures);
  }

  /** Reads SSE events until the answer ends; each event's data is one JSON-RPC message. */
  private readEvents(answer: UpstreamAnswer): Promise<void> {
    return answer.events((data) => this.onmessage?.(JSON.parse(data) as JSONRPCMessage));
  }

  /** The answer to `sent` passed the bound: the request gets an error saying so, in its answer's place. */
  private oversized(sent: JSONRPCMessage): void {
    const answer = oversizedAnswer(sent);
    if (answer !== undefined) this.onmessage?.(answer);
  }

  private fail(err: unknown): void {
    if (!this.closed) this.onerror?.(err instanceof Error ? err : new Error(String(err)));
  }

  /** Tells the server the session is over (DELETE); a server that keeps no sessions may refuse with 405. */
  async terminateSession(): Promise<void> {
    if (this.sessionId === undefined) return;
    const answer = await this.exchange("DELETE", {});
    await answer.dump();
    if (answer.statusCode >= 300 && answer.statusCode !== 405) throw new UpstreamHttpStatusError(answer.statusCode, `Error terminating the session (HTTP ${answer.statusCode})`);
    this.sessionId = undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.exchanges.stop(new Error("the upstream transport is closed"));
    this.onclose?.();
  }
}
