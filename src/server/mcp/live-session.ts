/**
 * What every live MCP session (the gateway's own /mcp, /mcp/<client>, virtual servers) keeps between its
 * requests: the caller of each JSON-RPC request in flight and of the latest one, when it was last used, and
 * its long-lived response streams, which keep it from being closed as idle.
 */
import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { McpCaller } from "../../services/mcp-server-tools.js";

/** The callers, use and open streams of one live session. */
export class LiveSession {
  /** The caller of the latest request: for notifications and for requests whose own caller was not recorded. */
  caller: McpCaller;
  lastSeen = Date.now();
  /** Long-lived response streams open now (the GET stream, the SSE stream). */
  openStreams = 0;
  /**
   * The caller of each request in flight: a handler answers with its own request's headers (the tools a
   * caller sees depend on them), and its span hangs under its HTTP request's.
   */
  private readonly callers = new Map<RequestId, McpCaller>();

  constructor(caller: McpCaller) {
    this.caller = caller;
  }

  /** Records a request's caller for the JSON-RPC requests it carries. */
  seen(caller: McpCaller, requestIds: readonly RequestId[]): void {
    this.caller = caller;
    this.lastSeen = Date.now();
    for (const id of requestIds) this.callers.set(id, caller);
  }

  /** The caller of a request in flight (forgotten once read), else the latest. */
  callerOf(requestId: RequestId): McpCaller {
    const caller = this.callers.get(requestId);
    if (caller === undefined) return this.caller;
    this.callers.delete(requestId);
    return caller;
  }

  /** Counts a long-lived stream until the response closes. */
  holdStream(res: { once(event: "close", listener: () => void): unknown }): void {
    this.openStreams++;
    res.once("close", () => {
      this.openStreams--;
      this.lastSeen = Date.now();
    });
  }
}
