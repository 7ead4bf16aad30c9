/**
 * Level-2 routing (its static part): which keys of a provider may serve an attempt, in the order
 * to try them. The first is a weighted random draw; the rest follow by further draws, and the caller moves
 * to the next one when the upstream answers with a status that `rotatesKey` accepts.
 */
import { allowedModelsOfConfig, keyAllowsModel, resolveAlias } from "./allowed-models.js";
import type { KeyBackoffs } from "./key-backoffs.js";
import type { ModelCatalog } from "./model-catalog.js";
import type { RouteHealth } from "./route-health.js";
import { RoutingError } from "./routing-error.js";
import { keepWhere } from "./keep-where.js";
import { weightedOrder } from "./weighted-random.js";
import type { ProviderConfig, ProviderKey, Random } from "./types.js";

/** One key to try, with the model id the upstream receives. */
export interface KeyChoice {
  key: ProviderKey;
  /** The requested model mapped through the key's aliases. */
  upstreamModel: string;
  /** The requested name when it was an alias, else null (for the `alias` label and pricing fallback). */
  alias: string | null;
}

/** Inputs of key selection for one provider attempt. */
export interface KeySelectionInput {
  provider: string;
  /** The model as requested (possibly an alias). */
  model: string;
  /** Every configured key of the provider. */
  keys: readonly ProviderKey[];
  /** The virtual key's config for this provider, or null without a virtual key (no key_ids filter). */
  config: ProviderConfig | null;
  catalog: ModelCatalog;
  random: Random;
  /** Route statistics that scale each key's weight; none keeps the configured weights. */
  health?: RouteHealth | undefined;
  /** Keys an upstream told to wait (429 with retry-after), skipped while another key can serve. */
  backoffs?: KeyBackoffs | undefined;
}

/** Upstream statuses after which the same provider is retried with its next key (429, 401, 403, 402). */
export function rotatesKey(status: number): boolean {
  return status === 429 || status === 401 || status === 403 || status === 402;
}

function permittedByKeyIds(config: ProviderConfig | null, key: ProviderKey): boolean {
  if (config === null) return true;
  if (config.keyIds.length === 1 && config.keyIds[0] === "*") return true;
  return config.keyIds.includes(key.id);
}

/** The models a virtual key's provider config allows that at least one of the keys its key_ids permit can serve. */
export function servableModels(config: ProviderConfig, keys: readonly ProviderKey[], catalog: ModelCatalog): string[] {
  const permitted = keys.filter((key) => permittedByKeyIds(config, key));
  return allowedModelsOfConfig(config, catalog).filter((model) => permitted.some((key) => keyAllowsModel(key, model)));
}

/** Orders the keys that may serve the request: filtered by key_ids and model rules, then weighted random. */
export function orderKeys(input: KeySelectionInput): KeyChoice[] {
  const { provider, model } = input;
  if (input.keys.length === 0) {
    throw new RoutingError(
      "caller_provider_not_configured",
      `provider "${provider}" has no keys configured; add one with POST /api/v1/providers or pick another provider`,
      "model",
    );
  }
  const permitted = keepWhere(input.keys, (key) => permittedByKeyIds(input.config, key));
  if (permitted.length === 0) {
    throw new RoutingError(
      "policy_keys_blocked",
      input.config?.keyIds.length === 0
        ? `key_ids of the "${provider}" provider config is empty, so every ${provider} key is blocked for this virtual key; set key_ids to ["*"] or list key ids`
        : `none of the key_ids of the "${provider}" provider config names a configured ${provider} key; fix key_ids`,
    );
  }
  const allowing = keepWhere(permitted, (key) => keyAllowsModel(key, model));
  if (allowing.length === 0) {
    throw new RoutingError(
      "caller_model_not_allowed",
      `no ${provider} key usable here allows model "${model}"; add it to a key's models (or aliases) or pick another model`,
      "model",
    );
  }
  const backoffs = input.backoffs;
  const ready = backoffs === undefined ? allowing : keepWhere(allowing, (key) => !backoffs.waiting(provider, key.id));
  const serving = ready.length > 0 ? ready : allowing;
  const health = input.health;
  let order: readonly ProviderKey[];
  if (health === undefined) order = weightedOrder(serving, (key) => key.weight, input.random);
  else {
    health.refresh();
    // A circuit-broken key (factor 0) is skipped while any other key can serve.
    const open = keepWhere(serving, (key) => health.keyFactor(provider, key.id) > 0);
    const pool = open.length > 0 ? open : serving;
    order = weightedOrder(pool, (key) => key.weight * health.keyFactor(provider, key.id), input.random);
  }
  return order.map((key) => {
    const upstreamModel = resolveAlias(key, model);
    return { key, upstreamModel, alias: Object.hasOwn(key.aliases, model) ? model : null };
  });
}
