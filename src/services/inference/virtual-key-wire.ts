/**
 * A virtual key as wire JSON (the proto JSON of gw.routing.v1.VirtualKey, snake_case), shared by the admin
 * API, the config file and the store: parsed and checked here once into routing's VirtualKey, and kept
 * in a canonical form (defaults filled, durations as written) for storage and reads.
 */
import { durationField } from "../../config/duration.js";
import { invalidField } from "../../errors.js";
import type { Budget, McpConfig, ProviderConfig, RateLimit, VirtualKey } from "../../routing/types.js";
import { providerConfigsProblem } from "../../routing/validate-provider-configs.js";
import { cacheSettingsOf } from "../../inference/cache-settings-wire.js";
import { levelBudgetOf, levelRateLimitOf } from "./level-limits-wire.js";
import { isWire, numberField, requiredString, stringList, weightField, type Wire } from "../../config/wire-fields.js";

/** A parsed virtual key: routing's view and the canonical wire lists to store. */
export interface ParsedVirtualKey {
  key: VirtualKey;
  providerConfigs: Wire[];
  /** null when the key does not set mcp_configs. */
  mcpConfigs: Wire[] | null;
  /** team_id, customer_id, budget, rate_limit and cache, canonical; only those set. */
  limits: Wire;
}

/** An optional id of a team or customer; absent is "". */
function optionalId(value: unknown, path: string): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw invalidField(path, "must be a string id");
  if (value.length > MAX_KEY_TEXT) throw invalidField(path, `is ${value.length} characters long; use at most ${MAX_KEY_TEXT}`);
  return value.trim();
}

function budgetOf(raw: unknown, path: string): { budget: Budget; wire: Wire } {
  if (!isWire(raw)) throw invalidField(path, `must be an object {"max_limit": <USD>, "reset_duration": "30d"}`);
  const resetDuration = raw["reset_duration"];
  if (raw["calendar_aligned"] === true) throw invalidField(`${path}.calendar_aligned`, "is not supported in provider_configs budgets; set it on the key's own budget");
  const budget = {
    maxLimit: numberField(raw["max_limit"], `${path}.max_limit`, Number.NaN),
    resetDurationMs: durationField(resetDuration, `${path}.reset_duration`, { example: "30d" }),
  };
  return { budget, wire: { max_limit: budget.maxLimit, reset_duration: resetDuration } };
}

function rateLimitOf(raw: unknown, path: string): { limit: RateLimit; wire: Wire } | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, `must be an object {"token_max_limit": <n>, "token_reset_duration": "1m"}`);
  for (const field of ["request_max_limit", "request_reset_duration"]) {
    const value = raw[field];
    if (value !== undefined && value !== null && value !== "" && value !== 0 && value !== "0") {
      throw invalidField(`${path}.${field}`, "is not supported in provider_configs; limit requests with the key's own rate_limit");
    }
  }
  const resetDuration = raw["token_reset_duration"];
  // The proto JSON of an int64 is a string; the config file writes a number.
  const rawMax = typeof raw["token_max_limit"] === "string" && /^\d+$/.test(raw["token_max_limit"]) ? Number(raw["token_max_limit"]) : raw["token_max_limit"];
  const limit = {
    tokenMaxLimit: numberField(rawMax, `${path}.token_max_limit`, Number.NaN),
    tokenResetDurationMs: durationField(resetDuration, `${path}.token_reset_duration`, { example: "1m" }),
  };
  return { limit, wire: { token_max_limit: limit.tokenMaxLimit, token_reset_duration: resetDuration } };
}

function providerConfigOf(raw: unknown, path: string): { config: ProviderConfig; wire: Wire } {
  if (!isWire(raw)) throw invalidField(path, "must be an object");
  const provider = requiredString(raw["provider"], `${path}.provider`, `name a provider, e.g. "openai"`);
  const rawBudgets = raw["budgets"] ?? [];
  if (!Array.isArray(rawBudgets)) throw invalidField(`${path}.budgets`, "must be a list");
  const budgets = rawBudgets.map((budget, index) => budgetOf(budget, `${path}.budgets[${index}]`));
  const rateLimit = rateLimitOf(raw["rate_limit"], `${path}.rate_limit`);
  const config: ProviderConfig = {
    provider,
    // Omitted lists are empty: deny by default.
    allowedModels: stringList(raw["allowed_models"], `${path}.allowed_models`),
    keyIds: stringList(raw["key_ids"], `${path}.key_ids`),
    weight: weightField(raw["weight"], `${path}.weight`),
    budgets: budgets.map((b) => b.budget),
    rateLimit: rateLimit?.limit ?? null,
  };
  const wire: Wire = {
    provider,
    allowed_models: config.allowedModels,
    key_ids: config.keyIds,
    weight: config.weight,
    budgets: budgets.map((b) => b.wire),
    ...(rateLimit ? { rate_limit: rateLimit.wire } : {}),
  };
  return { config, wire };
}

function mcpConfigOf(raw: unknown, path: string): McpConfig {
  if (!isWire(raw)) throw invalidField(path, "must be an object {mcp_client_name, tools_to_execute}");
  return {
    mcpClientName: requiredString(raw["mcp_client_name"], `${path}.mcp_client_name`, "name an MCP client"),
    toolsToExecute: stringList(raw["tools_to_execute"], `${path}.tools_to_execute`),
  };
}

/** The id and name columns hold at most this many characters. */
const MAX_KEY_TEXT = 255;

function boundedString(value: unknown, path: string, hint: string): string {
  const text = requiredString(value, path, hint);
  if (text.length > MAX_KEY_TEXT) throw invalidField(path, `is ${text.length} characters long; use at most ${MAX_KEY_TEXT}`);
  return text;
}

/** Parses and checks one virtual key; `path` prefixes field names (e.g. `governance.virtual_keys[0]`, or "" for the API). */
export function parseVirtualKeyWire(raw: Wire, path: string): ParsedVirtualKey {
  const at = (field: string): string => (path === "" ? field : `${path}.${field}`);
  const id = boundedString(raw["id"], at("id"), "a unique id for the key");
  const name = boundedString(raw["name"], at("name"), "a human-readable name");
  const value = requiredString(raw["value"], at("value"), "the secret callers send");
  const budget = levelBudgetOf(raw["budget"], at("budget"));
  const rateLimit = levelRateLimitOf(raw["rate_limit"], at("rate_limit"));
  const teamId = optionalId(raw["team_id"], at("team_id"));
  const customerId = optionalId(raw["customer_id"], at("customer_id"));
  const cache = cacheSettingsOf(raw["cache"], at("cache"));
  const isActive = raw["is_active"];
  if (isActive !== undefined && isActive !== null && typeof isActive !== "boolean") throw invalidField(at("is_active"), "must be true or false");
  const rawConfigs = raw["provider_configs"] ?? [];
  if (!Array.isArray(rawConfigs)) throw invalidField(at("provider_configs"), "must be a list");
  // Omitted (or null) differs from []: the key then sees what a caller without a key sees.
  const rawMcp = raw["mcp_configs"] ?? null;
  if (rawMcp !== null && !Array.isArray(rawMcp)) throw invalidField(at("mcp_configs"), "must be a list");
  const configs = rawConfigs.map((config, index) => providerConfigOf(config, `${at("provider_configs")}[${index}]`));
  const providerConfigs = configs.map((c) => c.config);
  const problem = providerConfigsProblem(providerConfigs, at("provider_configs"));
  if (problem) throw problem;
  const mcpConfigs = rawMcp?.map((entry, index) => mcpConfigOf(entry, `${at("mcp_configs")}[${index}]`)) ?? null;
  const seenClients = new Set<string>();
  for (const [index, entry] of (mcpConfigs ?? []).entries()) {
    if (seenClients.has(entry.mcpClientName)) {
      throw invalidField(`${at("mcp_configs")}[${index}].mcp_client_name`, `"${entry.mcpClientName}" appears twice; merge the two entries`);
    }
    seenClients.add(entry.mcpClientName);
  }
  return {
    // A key is meant to be used; is_active: false switches it off.
    key: { id, name, value, isActive: isActive ?? true, providerConfigs, mcpConfigs, teamId, customerId, budget: budget?.budget ?? null, rateLimit: rateLimit?.rateLimit ?? null, ...(cache ? { cache: cache.settings } : {}) },
    providerConfigs: configs.map((c) => c.wire),
    mcpConfigs: mcpConfigs?.map((c) => ({ mcp_client_name: c.mcpClientName, tools_to_execute: c.toolsToExecute })) ?? null,
    limits: {
      ...(teamId ? { team_id: teamId } : {}),
      ...(customerId ? { customer_id: customerId } : {}),
      ...(budget ? { budget: budget.wire } : {}),
      ...(rateLimit ? { rate_limit: rateLimit.wire } : {}),
      // Stored beside the limits: one JSON column holds every optional per-key setting.
      ...(cache ? { cache: cache.wire } : {}),
    },
  };
}
