/**
 * Request headers that describe one HTTP connection or the body of one message: a proxy never passes them
 * on, since the next hop gets a connection and a body of the proxy's own. The REST bridge and the /v1
 * upstream calls share the list.
 */

/** Hop-by-hop headers (RFC 9110 7.6.1, the proxy-* ones included), Host, Expect and the body's own headers. */
export const CONNECTION_AND_BODY_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "http2-settings",
  "host",
  "expect",
  "content-length",
  "content-type",
  "content-encoding",
  "accept-encoding",
]);
