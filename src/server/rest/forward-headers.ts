/**
 * The request headers a REST call passes on to the RPC, so interceptors see what the client sent
 * (authorization, x-gw-*, user-agent, ...). Hop-by-hop headers, headers that describe the HTTP body
 * (the RPC carries its own), and Connect/gRPC protocol headers a client could use to steer the
 * in-process call are dropped.
 */
import type * as http from "node:http";
import type * as http2 from "node:http2";
import { PEER_ADDRESS_HEADER, socketPeerAddress } from "../../peer-address.js";
import { CONNECTION_AND_BODY_HEADERS } from "../../proxy-headers.js";

/** Headers to send with the RPC. */
export function forwardedHeaders(req: http.IncomingMessage | http2.Http2ServerRequest): Headers {
  const listedInConnection = new Set(
    String(req.headers["connection"] ?? "")
      .split(",")
      .map((t) => t.trim().toLowerCase())
      .filter((t) => t !== ""),
  );
  const out = new Headers();
  // The RPC has no Host of its own: pass on the one the client used, so a service can link back to it.
  const host = req.headers["host"] ?? req.headers[":authority"];
  if (typeof host === "string" && req.headers["x-forwarded-host"] === undefined) out.set("x-forwarded-host", host);
  for (const [rawName, value] of Object.entries(req.headers)) {
    const name = rawName.toLowerCase();
    if (value === undefined || name.startsWith(":") || CONNECTION_AND_BODY_HEADERS.has(name) || listedInConnection.has(name)) continue;
    if (name.startsWith("connect-") || name.startsWith("grpc-")) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      try {
        out.append(name, v);
      } catch {
        // Node accepted it but fetch's Headers did not; such a header cannot matter to a service.
      }
    }
  }
  // Set, not appended: the value a client sent under this name is replaced by the socket's address.
  out.set(PEER_ADDRESS_HEADER, socketPeerAddress(req.socket));
  return out;
}
