/**
 * The caller's virtual key for caller-facing endpoints outside routing (tool execution, listings): resolved
 * from the request headers against the in-memory registry, with the same refusals /v1 inference gives.
 */
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError } from "../../errors.js";
import { RoutingError } from "../../routing/routing-error.js";
import type { VirtualKey } from "../../routing/types.js";
import { credentialFromHeaders } from "./credential.js";
import type { Inference } from "./state.js";

/** The active virtual key the headers name, or null without one; throws 401 for an unknown key (or a missing one under enforce_governance) and 403 for an inactive one. */
export function callerVirtualKey(get: (name: string) => string | null | undefined, inference: Inference, settings: RuntimeSettings): VirtualKey | null {
  const key = inference.virtualKeys.resolve(credentialFromHeaders(get));
  if (key === null) {
    if (settings.client.enforceGovernance) {
      throw new GatewayError("unauthenticated", "this gateway requires a virtual key (client.enforce_governance); send it as x-gw-vk or Authorization: Bearer", {
        type: "caller_virtual_key_required",
        httpStatus: 401,
      });
    }
    return null;
  }
  if (!key.isActive) throw new RoutingError("policy_virtual_key_inactive", `virtual key "${key.name}" is inactive; an admin can switch it on with is_active: true`);
  return key;
}

/** Whether a virtual key's mcp_configs let it run `tool` of the MCP client `client` (["*"] = every tool). */
export function keyAllowsTool(key: VirtualKey, client: string, tool: string): boolean {
  const config = key.mcpConfigs.find((entry) => entry.mcpClientName === client);
  return config !== undefined && (config.toolsToExecute.includes("*") || config.toolsToExecute.includes(tool));
}
