/**
 * The legacy HTTP+SSE transport, sending the client's headers on every request through the fetch it is
 * given (one shared agent, so sessions reuse pooled TCP connections). Streamable HTTP has a transport of
 * the gateway's own (relay/upstream-http-transport.ts).
 */
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { UpstreamHttpStatusError } from "./upstream-errors.js";

/** Wraps a fetch so a 401/403 becomes an error carrying the status (the SSE POST path only reports prose). */
function statusRecordingFetch(base: FetchLike): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (response.status === 401 || response.status === 403) {
      const body = await response.text().catch(() => "");
      throw new UpstreamHttpStatusError(response.status, `Error POSTing to endpoint (HTTP ${response.status}): ${body}`);
    }
    return response;
  };
}

/** A legacy HTTP+SSE transport sending `headers` on the GET stream and on every POST. */
export function sseTransport(url: URL, headers: Record<string, string>, fetch: FetchLike): SSEClientTransport {
  return new SSEClientTransport(url, {
    requestInit: { headers },
    fetch: statusRecordingFetch(fetch),
    // The GET stream is opened by the eventsource package; the SDK adds requestInit's headers to it,
    // and merging them here again keeps them there should that ever change.
    eventSourceInit: {
      fetch: (input, init) => {
        const merged = new Headers(init?.headers);
        for (const [name, value] of Object.entries(headers)) if (!merged.has(name)) merged.set(name, value);
        return fetch(input, { ...init, headers: merged });
      },
    },
  });
}
