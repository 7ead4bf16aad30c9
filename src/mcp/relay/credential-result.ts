/**
 * The answer to a tools/call of a caller without a per-user credential, as /mcp answers it: an `isError`
 * result carrying the mcp_auth_required payload, and a URL-mode elicitation naming the flow's page when the
 * downstream client declared it can take one.
 */
import { randomUUID } from "node:crypto";
import type { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ClientCapabilities, Notification, Request, RequestId, Result } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayError } from "../../errors.js";
import type { Logger } from "../../telemetry/logger.js";
import { McpAuthRequiredError } from "../credentials/auth-required.js";
import { ANY_RESULT } from "./any-result.js";

/** The result of the call, after sending the elicitation (not awaited: the user finishes the flow in a browser, then calls again). */
export function credentialResult(
  missing: McpAuthRequiredError | GatewayError,
  requestId: RequestId,
  downstream: { protocol: Protocol<Request, Notification, Result>; capabilities: ClientCapabilities | undefined; logger: Logger; timeoutMs: number },
): CallToolResult {
  if (!(missing instanceof McpAuthRequiredError)) return { content: [{ type: "text", text: `Error: ${missing.message}` }], isError: true };
  const payload = missing.payload;
  if (payload.kind === "headers" && downstream.capabilities?.elicitation?.url !== undefined) {
    downstream.protocol
      .request({ method: "elicitation/create", params: { mode: "url", message: payload.message, url: payload.submit_url, elicitationId: randomUUID() } }, ANY_RESULT, {
        relatedRequestId: requestId,
        timeout: downstream.timeoutMs,
      })
      .catch((err: unknown) => downstream.logger.debug({ err }, "the MCP client did not answer the credential elicitation"));
  }
  return { content: [{ type: "text", text: missing.toolResult }], isError: true };
}
