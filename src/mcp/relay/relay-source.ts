/**
 * What the /mcp/<client> relay needs of one MCP client of the runtime: its configuration and state, its
 * last discovered tools, how to reach its upstream (a session of the caller's own, or the shared stdio
 * connection), and where its tool calls are measured.
 */
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { McpClientSpec } from "../client-spec.js";
import type { CallerIdentity } from "../credentials/index.js";
import type { DiscoveredTool } from "../discover.js";
import type { UpstreamSession } from "../upstream-session.js";
import type { UpstreamLink } from "./upstream-link.js";
import type { GovernanceLabels, McpErrorType } from "../../telemetry/metrics.js";

/** Who a relayed session acts for: what per-user auth types build the upstream credential from. */
export interface RelayCredentialContext {
  identity: CallerIdentity | null;
  /** The caller's own IdP access token (token_exchange exchanges it; never sent upstream). */
  subjectToken: string | null;
  /** Where submission links point back to when mcp_external_client_url is unset. */
  origin: string | null;
  /** The caller's virtual key id, whose guardrails cover its tool calls (absent or null: no key). */
  virtualKeyId?: string | null;
}

/** One client as the relay reaches it. */
export interface RelaySource {
  readonly clientId: string;
  readonly spec: McpClientSpec;
  /** Why the client refuses calls now (disabled, not verified, needs reauthorization, not running), or null. */
  refusal(): string | null;
  /** The tools last discovered, listed while a caller has no credential yet. */
  tools(): readonly DiscoveredTool[];
  /** The bound of one relayed request (tool_execution_timeout). */
  requestTimeoutMs(): number;
  /** How long a server-to-client request waits for the downstream client's answer (client.mcp_relay_request_timeout). */
  serverRequestTimeoutMs(): number;
  /**
   * http and sse: a new upstream session with the caller's credential, declaring `capabilities`. Throws
   * McpAuthRequiredError, or the mcp_identity_required GatewayError, when a per-user credential is missing.
   */
  open(caller: RelayCredentialContext, capabilities: ClientCapabilities): Promise<UpstreamSession>;
  /** stdio: the client's one connection, shared by every session. */
  shared(): Promise<UpstreamSession>;
  /** One session's link with the client's tool guardrails and quarantine applied (absent: the link as it is). */
  guard?(link: UpstreamLink, caller: RelayCredentialContext): UpstreamLink;
  /** Records one relayed request in gw_mcp_client_operation_duration_seconds under its method. */
  operationDone(method: string, tool: string, durationS: number, errorType: McpErrorType, governance: GovernanceLabels | undefined): void;
}
