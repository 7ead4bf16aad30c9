/** The pending_oauth answer of an oauth client's creation, initiate-verification and reauthorize. */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { GatewayError } from "../errors.js";
import type { McpClientRecord, McpOauthCredentialRecord } from "../store/index.js";

/** The fields the three answers share. */
export interface PendingOauthPayload {
  status: string;
  message: string;
  clientId: string;
  oauthConfigId: string;
  authorizeUrl: string;
  expiresAt: Timestamp;
  completeUrl: string;
  statusUrl: string;
}

/** The base of the callback URL: client.mcp_external_client_url, else the origin the request came in by. */
export function oauthPublicBase(origin: string | null, settings: RuntimeSettings | undefined): string {
  const external = settings?.client.mcpExternalClientUrl.trim() ?? "";
  if (external !== "") return external;
  if (origin) return origin;
  throw new GatewayError(
    "failed_precondition",
    "the gateway cannot tell the URL the authorization server should send the browser back to; set client.mcp_external_client_url",
    { type: "external_url_unknown" },
  );
}

/** The pending_oauth payload of an attempt. */
export function pendingOauthPayload(client: McpClientRecord, attempt: McpOauthCredentialRecord, authorizeUrl: string, message: string): PendingOauthPayload {
  return {
    status: "pending_oauth",
    message,
    clientId: client.id,
    oauthConfigId: attempt.id,
    authorizeUrl,
    expiresAt: timestampFromDate(attempt.expiresAt),
    completeUrl: `/api/mcp/client/${attempt.id}/complete-oauth`,
    statusUrl: `/api/oauth/config/${attempt.id}/status`,
  };
}
