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
export function sendJson(res: Res, status: number, body: unknown, headers: Readonly<Record<string, string>> = NO_HEADERS): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/**
 * Answers with JSON text already encoded, and its length. Does nothing once the headers are out or the
 * client is gone, since no answer can be written then.
 */
export function sendJsonText(res: Res, status: number, text: string, headers: Readonly<Record<string, string>> = NO_HEADERS): void {
  if (res.headersSent || res.destroyed) return;
  // Built in one literal, the extra headers copied after: spreading them first sent V8 down its slow
  // property-definition path for every answer. The two set here win, as they did.
  const all: Record<string, string | number> = { "content-type": "application/json", "content-length": Buffer.byteLength(text) };
  for (const name in headers) if (name !== "content-type" && name !== "content-length") all[name] = headers[name] as string;
  res.writeHead(status, all);
  res.end(text);
}

/** No extra headers. */
export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** Answers with the /api error envelope `{"error": {"type", "message"}}`. */
export function sendError(res: Res, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { type, message } });
}
