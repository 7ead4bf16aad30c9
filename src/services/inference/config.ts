/**
 * The inference configuration: providers (adapters and their keys) and virtual keys, turned from the
 * config file's sections into the shapes the providers and routing layers use, then built into the
 * in-memory state the /v1 hot path reads (adapters, key catalog, virtual-key registry, usage counters).
 * A bad entry throws a GatewayError naming its path, so a bad file stops start-up.
 */
import { parseDuration } from "../../config/duration.js";
import type { ProviderFileConfig, ProviderKeyFileConfig, VirtualKeyFileConfig } from "../../config/file-config.js";
import { GatewayError, invalidField } from "../../errors.js";
import { createProviderAdapter } from "../../providers/registry.js";
import type { AzureKeyConfig, ProviderAdapter, ProviderConfig as ProviderSetup, ProviderKey } from "../../providers/types.js";
import { createKeyCatalog, type ModelCatalog } from "../../routing/model-catalog.js";
import type { Budget, McpConfig, ProviderConfig, Random, RateLimit, VirtualKey } from "../../routing/types.js";
import { UsageLimits } from "../../routing/usage-limits.js";
import { providerConfigsProblem } from "../../routing/validate-provider-configs.js";
import { VirtualKeyRegistry } from "../../routing/virtual-key-registry.js";

/** What the /v1 inference path is configured with (AppOptions.inference). */
export interface InferenceOptions {
  /** Configured providers with their decrypted keys; the name selects the adapter. */
  providers: ProviderSetup[];
  /** Virtual keys, already validated. */
  virtualKeys: VirtualKey[];
  /** Dice for provider and key selection (default Math.random; tests pass a seeded one). */
  random?: Random;
  /** Upper bound on waiting for upstream headers and between body chunks (adapter default otherwise). */
  upstreamTimeoutMs?: number;
}

/** One provider as the hot path uses it. */
export interface InferenceProvider {
  adapter: ProviderAdapter;
  keys: readonly ProviderKey[];
}

/** The built, in-memory inference state. */
export interface Inference {
  providers: ReadonlyMap<string, InferenceProvider>;
  catalog: ModelCatalog;
  virtualKeys: VirtualKeyRegistry;
  limits: UsageLimits;
  random: Random;
  upstreamTimeoutMs: number | undefined;
  /** Closes every adapter's keep-alive pools. */
  close(): Promise<void>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function stringList(value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === "string")) {
    throw invalidField(path, "must be a list of strings");
  }
  return value;
}

function durationMs(value: unknown, path: string, example: string): number {
  if (typeof value !== "string") throw invalidField(path, `must be a duration string such as "${example}"`);
  try {
    return parseDuration(value);
  } catch (err) {
    throw invalidField(path, (err as Error).message);
  }
}

function numberField(value: unknown, path: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number") throw invalidField(path, `must be a number, got ${JSON.stringify(value)}`);
  return value;
}

function budgetOf(raw: unknown, path: string): Budget {
  if (!isRecord(raw)) throw invalidField(path, `must be an object {"max_limit": <USD>, "reset_duration": "30d"}`);
  return {
    maxLimit: numberField(raw["max_limit"], `${path}.max_limit`, Number.NaN),
    resetDurationMs: durationMs(raw["reset_duration"], `${path}.reset_duration`, "30d"),
  };
}

function rateLimitOf(raw: unknown, path: string): RateLimit | null {
  if (raw === undefined || raw === null) return null;
  if (!isRecord(raw)) throw invalidField(path, `must be an object {"token_max_limit": <n>, "token_reset_duration": "1m"}`);
  return {
    tokenMaxLimit: numberField(raw["token_max_limit"], `${path}.token_max_limit`, Number.NaN),
    tokenResetDurationMs: durationMs(raw["token_reset_duration"], `${path}.token_reset_duration`, "1m"),
  };
}

function providerConfigOf(raw: unknown, path: string): ProviderConfig {
  if (!isRecord(raw)) throw invalidField(path, "must be an object");
  const provider = raw["provider"];
  if (typeof provider !== "string") throw invalidField(`${path}.provider`, `is required: name a provider, e.g. "openai"`);
  const budgets = raw["budgets"];
  if (budgets !== undefined && budgets !== null && !Array.isArray(budgets)) throw invalidField(`${path}.budgets`, "must be a list");
  return {
    provider,
    // Omitted lists are empty, as in the API: deny by default.
    allowedModels: stringList(raw["allowed_models"], `${path}.allowed_models`),
    keyIds: stringList(raw["key_ids"], `${path}.key_ids`),
    weight: numberField(raw["weight"], `${path}.weight`, 1),
    budgets: (budgets ?? []).map((budget, index) => budgetOf(budget, `${path}.budgets[${index}]`)),
    rateLimit: rateLimitOf(raw["rate_limit"], `${path}.rate_limit`),
  };
}

function mcpConfigOf(raw: unknown, path: string): McpConfig {
  if (!isRecord(raw) || typeof raw["mcp_client_name"] !== "string") {
    throw invalidField(`${path}.mcp_client_name`, "is required");
  }
  return { mcpClientName: raw["mcp_client_name"], toolsToExecute: stringList(raw["tools_to_execute"], `${path}.tools_to_execute`) };
}

/** Turns one config-file virtual key into routing's shape; `path` is e.g. `governance.virtual_keys[0]`. */
export function virtualKeyFromFile(raw: VirtualKeyFileConfig, path: string): VirtualKey {
  const value = raw["value"];
  if (typeof value !== "string" || value === "") throw invalidField(`${path}.value`, "is required: the secret callers send");
  for (const field of ["budget", "rate_limit"]) {
    // Accepting these without enforcing them would leave an operator believing spend is capped.
    if (raw[field] !== undefined && raw[field] !== null) {
      throw invalidField(`${path}.${field}`, `a key-wide ${field} is not enforced yet; set it on each provider_configs entry instead`);
    }
  }
  const isActive = raw["is_active"];
  if (isActive !== undefined && isActive !== null && typeof isActive !== "boolean") throw invalidField(`${path}.is_active`, "must be true or false");
  const configs = raw["provider_configs"];
  if (configs !== undefined && configs !== null && !Array.isArray(configs)) throw invalidField(`${path}.provider_configs`, "must be a list");
  const mcp = raw["mcp_configs"];
  if (mcp !== undefined && mcp !== null && !Array.isArray(mcp)) throw invalidField(`${path}.mcp_configs`, "must be a list");
  const providerConfigs = (configs ?? []).map((config, index) => providerConfigOf(config, `${path}.provider_configs[${index}]`));
  const problem = providerConfigsProblem(providerConfigs, `${path}.provider_configs`);
  if (problem) throw problem;
  return {
    id: raw.id,
    name: raw.name,
    value,
    // A key declared in the file is meant to be used; is_active: false switches it off.
    isActive: isActive ?? true,
    providerConfigs,
    mcpConfigs: (mcp ?? []).map((entry, index) => mcpConfigOf(entry, `${path}.mcp_configs[${index}]`)),
  };
}

function azureOf(raw: Record<string, unknown> | null, path: string): AzureKeyConfig | null {
  if (raw === null) return null;
  const endpoint = raw["endpoint"];
  if (typeof endpoint !== "string" || endpoint === "") throw invalidField(`${path}.endpoint`, "is required, e.g. https://my-resource.openai.azure.com");
  const deployments = raw["deployments"] ?? {};
  if (!isRecord(deployments) || !Object.values(deployments).every((v) => typeof v === "string")) {
    throw invalidField(`${path}.deployments`, `must map model ids to deployment names, e.g. {"gpt-4o": "my-gpt4o"}`);
  }
  const apiVersion = raw["api_version"] ?? "";
  if (typeof apiVersion !== "string") throw invalidField(`${path}.api_version`, "must be a string");
  return { endpoint, deployments: deployments as Record<string, string>, apiVersion };
}

function providerKeyFromFile(key: ProviderKeyFileConfig, path: string): ProviderKey {
  return {
    id: key.id,
    name: key.name,
    value: key.value,
    models: key.models,
    aliases: key.aliases,
    weight: key.weight,
    azure: azureOf(key.azureKeyConfig, `${path}.azure_key_config`),
  };
}

/** Builds InferenceOptions from the config file's `providers` and `governance.virtual_keys`. */
export function inferenceOptionsFromFile(
  providers: Readonly<Record<string, ProviderFileConfig>>,
  virtualKeys: readonly VirtualKeyFileConfig[],
): InferenceOptions {
  const setups = Object.entries(providers).map(([name, provider]): ProviderSetup => {
    const seen = new Set<string>();
    const keys = provider.keys.map((key, index) => {
      const path = `providers.${name}.keys[${index}]`;
      if (seen.has(key.id)) throw invalidField(`${path}.id`, `"${key.id}" appears twice in provider ${name}; key ids must be unique`);
      seen.add(key.id);
      if (!(Number.isFinite(key.weight) && key.weight >= 0)) throw invalidField(`${path}.weight`, `must be a finite number >= 0, got ${key.weight}`);
      return providerKeyFromFile(key, path);
    });
    return { name, baseUrl: provider.networkConfig.baseUrl, keys };
  });
  const ids = new Map<string, number>();
  const values = new Map<string, number>();
  const keys = virtualKeys.map((raw, index) => {
    const path = `governance.virtual_keys[${index}]`;
    const key = virtualKeyFromFile(raw, path);
    const sameId = ids.get(key.id);
    if (sameId !== undefined) throw invalidField(`${path}.id`, `"${key.id}" is also the id of governance.virtual_keys[${sameId}]`);
    const sameValue = values.get(key.value);
    if (sameValue !== undefined) throw invalidField(`${path}.value`, `is the same secret as governance.virtual_keys[${sameValue}]; every key needs its own value`);
    ids.set(key.id, index);
    values.set(key.value, index);
    return key;
  });
  return { providers: setups, virtualKeys: keys };
}

/** Builds the in-memory inference state: one adapter per provider, the key catalog and the registries. */
export function buildInference(options: InferenceOptions): Inference {
  const providers = new Map<string, InferenceProvider>();
  try {
    for (const setup of options.providers) {
      if (providers.has(setup.name)) {
        throw new GatewayError("invalid_argument", `provider ${setup.name} is configured twice`, { field: `providers.${setup.name}` });
      }
      providers.set(setup.name, { adapter: createProviderAdapter(setup), keys: setup.keys });
    }
  } catch (err) {
    for (const provider of providers.values()) void provider.adapter.close();
    throw err;
  }
  const keysByProvider = new Map([...providers].map(([name, provider]) => [name, provider.keys] as const));
  const virtualKeys = new VirtualKeyRegistry();
  virtualKeys.replaceAll(options.virtualKeys);
  return {
    providers,
    catalog: createKeyCatalog(keysByProvider),
    virtualKeys,
    limits: new UsageLimits(),
    random: options.random ?? Math.random,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    async close() {
      await Promise.all([...providers.values()].map((provider) => provider.adapter.close()));
    },
  };
}
