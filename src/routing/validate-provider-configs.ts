/**
 * Write-time checks of a virtual key's provider_configs, so routing can trust weights, budgets and
 * limits on the hot path. The admin API calls this before persisting.
 */
import { invalidField, type GatewayError } from "../errors.js";
import type { ProviderConfig } from "./types.js";

function finiteAtLeastZero(value: number): boolean {
  return Number.isFinite(value) && value >= 0;
}

/** Returns the first problem of the configs as a field error, or null when they are valid. */
export function providerConfigsProblem(configs: readonly ProviderConfig[], base = "provider_configs"): GatewayError | null {
  const seen = new Set<string>();
  for (const [index, config] of configs.entries()) {
    const at = `${base}[${index}]`;
    if (config.provider.trim() === "") return invalidField(`${at}.provider`, "is empty; name a provider, e.g. \"openai\"");
    if (seen.has(config.provider)) {
      return invalidField(`${at}.provider`, `"${config.provider}" appears twice; merge the two configs into one`);
    }
    seen.add(config.provider);
    if (!finiteAtLeastZero(config.weight)) {
      return invalidField(`${at}.weight`, `must be a finite number >= 0, got ${config.weight}`);
    }
    if (config.allowedModels.includes("*") && config.allowedModels.length > 1) {
      return invalidField(`${at}.allowed_models`, `"*" must be the only entry; drop the other entries or the "*"`);
    }
    if (config.keyIds.includes("*") && config.keyIds.length > 1) {
      return invalidField(`${at}.key_ids`, `"*" must be the only entry; drop the other entries or the "*"`);
    }
    for (const [budgetIndex, budget] of config.budgets.entries()) {
      const budgetAt = `${at}.budgets[${budgetIndex}]`;
      if (!finiteAtLeastZero(budget.maxLimit)) {
        return invalidField(`${budgetAt}.max_limit`, `must be a finite number of USD >= 0, got ${budget.maxLimit}`);
      }
      if (!(Number.isFinite(budget.resetDurationMs) && budget.resetDurationMs > 0)) {
        return invalidField(`${budgetAt}.reset_duration`, `must be a positive duration such as "1h" or "30d"`);
      }
    }
    const limit = config.rateLimit;
    if (limit !== null) {
      if (!(Number.isSafeInteger(limit.tokenMaxLimit) && limit.tokenMaxLimit >= 0)) {
        return invalidField(`${at}.rate_limit.token_max_limit`, `must be a whole number >= 0, got ${limit.tokenMaxLimit}`);
      }
      if (!(Number.isFinite(limit.tokenResetDurationMs) && limit.tokenResetDurationMs > 0)) {
        return invalidField(`${at}.rate_limit.token_reset_duration`, `must be a positive duration such as "1m"`);
      }
    }
  }
  return null;
}
