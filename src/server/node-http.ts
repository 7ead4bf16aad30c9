/**
 * The request and response types both protocol servers (HTTP/1.1 and h2c) hand the handlers, and the one
 * way a handler answers with JSON.
 */
import type * as http from "node:http";
import type * as http2 from "node:http2";

/** A request from either server. */
export type Req = http.IncomingMessage | http2.Http2ServerRequest;

/** A response of either server. */
export type Res = http.ServerResponse | http2.Http2ServerResponse;

/** Answers with `body` encoded as JSON; see sendJsonText. */
export function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/**
 * Answers with JSON text already encoded, and its length. Does nothing once the headers are out or the
 * client is gone, since no answer can be written then.
 */
export function sendJsonText(res: Res, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Answers with the /api error envelope `{"error": {"type", "message"}}`. */
export function sendError(res: Res, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { type, message } });
}
