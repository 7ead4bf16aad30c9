/**
 * The state a client reports on reads. The runtime manager (the connection runtime) owns live states;
 * this module decides what to report when the runtime has nothing to say: a disabled client is
 * `disabled`, an unverified per_user_headers or oauth client is `pending_verification`, and a client the
 * runtime does not hold is `error` (registered in the config store but missing from the runtime
 * manager).
 */
import { needsVerification, type McpClientSpec } from "./client-spec.js";

export type ClientStateName =
  | "healthy"
  | "unstable"
  | "needs_reauth"
  | "pending_verification"
  | "disabled"
  | "error"
  | "degraded";

export type FailureStageName = "connect" | "ping" | "list_tools" | "tool_discovery" | "transport_lost" | "credential";

/** The last_failure record a read reports (docs/mcp-gateway.md). */
export interface LastFailureView {
  stage: FailureStageName;
  message: string;
  at: Date;
  since: Date;
}

/** What the runtime knows about one client. */
export interface RuntimeClientView {
  state: ClientStateName;
  lastFailure?: LastFailureView;
}

/** Read access to the runtime manager's states. */
export interface RuntimeStateSource {
  stateOf(clientId: string): RuntimeClientView | undefined;
}

/** Decides the reported state and last failure of a client. */
export function reportedState(
  clientId: string,
  spec: Pick<McpClientSpec, "disabled" | "authType">,
  verified: boolean,
  runtime: RuntimeStateSource | undefined,
): RuntimeClientView {
  if (spec.disabled) return { state: "disabled" };
  if (needsVerification(spec.authType) && !verified) return { state: "pending_verification" };
  return runtime?.stateOf(clientId) ?? { state: "error" };
}
