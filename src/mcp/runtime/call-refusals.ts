/**
 * Which client states refuse tool calls and why: execute() and the relay refuse the call with the
 * reason, and offeredTools() leaves such a client's tools out.
 */
import { GatewayError } from "../../errors.js";
import type { ClientRuntime } from "../client-runtime.js";
import { needsVerification } from "../client-spec.js";
import type { RuntimeClientView } from "../client-state.js";
import type { StateRegistry } from "../state-registry.js";

/** States that refuse tool calls, with the reason given to the caller. */
const REFUSING: Partial<Record<RuntimeClientView["state"], string>> = {
  needs_reauth: "its upstream credential was rejected; update the client's headers, or for an oauth client POST /api/mcp/client/{id}/reauthorize",
  disabled: "it is disabled",
  pending_verification: "its one-time verification is not done (per_user_headers: POST /api/mcp/client/{id}/verify-headers; oauth: initiate-verification, consent, then complete-oauth; token_exchange: POST /api/mcp/client/{id}/verify-exchange)",
  error: "it is not running in this instance",
};

/** True when a client in `state` refuses tool calls (false for no state). */
export function refusingState(state: RuntimeClientView["state"] | undefined): boolean {
  return state !== undefined && REFUSING[state] !== undefined;
}

function refusal(name: string, state: keyof typeof REFUSING): GatewayError {
  return new GatewayError("failed_precondition", `MCP client "${name}" refuses tool calls: ${REFUSING[state] ?? state}`, {
    type: "mcp_client_unavailable",
    httpStatus: 409,
  });
}

/** The mcp_client_unavailable error of a client that refuses calls now (disabled, not verified, a refusing state), or null when it takes them. */
export function refusalOf(client: ClientRuntime, states: StateRegistry): GatewayError | null {
  if (client.spec.disabled) return refusal(client.spec.name, "disabled");
  if (needsVerification(client.spec.authType) && !client.verified) return refusal(client.spec.name, "pending_verification");
  const state = states.stateOf(client.id)?.state ?? "error";
  return REFUSING[state] ? refusal(client.spec.name, state) : null;
}
