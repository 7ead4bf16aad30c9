/**
 * What the guardrails of an MCP tool call read of its caller's virtual key: the team and customer whose
 * guardrails also cover the call, and the routing-rule variables a `when` condition may name (built only
 * when one does). Read from the in-memory registry and hierarchy, never the database.
 */
import type { RuleVariables } from "../routing/cel-expression.js";
import type { Inference } from "./state.js";

/** A key's facts as the tool stages take them. */
export interface GuardrailCallerFacts {
  teamId: string;
  customerId: string;
  variables(): Partial<RuleVariables>;
}

/** Looks a caller's virtual key up by id; null for a key that is not known. */
export function guardrailCallers(state: Pick<Inference, "virtualKeys" | "hierarchy" | "limits">): (virtualKeyId: string) => GuardrailCallerFacts | null {
  return (virtualKeyId) => {
    const key = state.virtualKeys.byId(virtualKeyId);
    if (key === null) return null;
    const { team, customer } = state.hierarchy.membership(key);
    return {
      teamId: team?.id ?? "",
      customerId: customer?.id ?? "",
      variables: () => {
        const configs = state.limits.percentUsed(key.id, key.providerConfigs);
        const levels = state.hierarchy.percentUsed(key);
        const used = { budget: Math.max(configs.budget, levels.budget), tokens: Math.max(configs.tokens, levels.tokens) };
        return {
          virtual_key_id: key.id,
          virtual_key_name: key.name,
          team_id: team?.id ?? "",
          team_name: team?.name ?? "",
          customer_id: customer?.id ?? "",
          customer_name: customer?.name ?? "",
          budget_used: used.budget,
          tokens_used: used.tokens,
          request: Math.max(used.budget, used.tokens, levels.requests),
        };
      },
    };
  };
}
