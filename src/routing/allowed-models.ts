/**
 * Which models a provider key and a virtual key's provider config allow, and how an alias maps to the
 * upstream id. The key rule has three steps: `models` when set; else the alias names; else
 * everything the catalog knows. Aliases never widen a restricted `models` list.
 */
import type { ModelCatalog } from "./model-catalog.js";
import { stripProviderPrefix } from "./model-name.js";
import type { ProviderConfig, ProviderKey } from "./types.js";

/** The models a key allows: `restricted` false means any model may be sent (the list is for display). */
export interface KeyModels {
  restricted: boolean;
  models: readonly string[];
}

function isWildcard(list: readonly string[]): boolean {
  return list.length === 1 && list[0] === "*";
}

/** Steps 1 and 2: the models a key is restricted to (its models list, else its alias names), or null for none. */
function restrictedModels(key: ProviderKey): readonly string[] | null {
  if (key.models.length > 0 && !isWildcard(key.models)) return key.models;
  const aliasNames = Object.keys(key.aliases);
  if (key.models.length === 0 && aliasNames.length > 0) return aliasNames;
  return null;
}

/** Applies the three steps to a key of `provider`; `models: ["*"]` counts as "every model". */
export function allowedModelsOfKey(key: ProviderKey, provider: string, catalog: ModelCatalog): KeyModels {
  const restricted = restrictedModels(key);
  if (restricted !== null) return { restricted: true, models: restricted };
  const models = new Set([...catalog.modelsOf(provider), ...Object.keys(key.aliases)]);
  // Step 3 is "all the catalog knows", but the catalog lags behind providers; an unrestricted key is not
  // the place to refuse a model the operator never restricted.
  return { restricted: false, models: [...models] };
}

/** Whether a key may serve `model` (the name as requested, alias or not); an unrestricted key's list is never built. */
export function keyAllowsModel(key: ProviderKey, model: string): boolean {
  const restricted = restrictedModels(key);
  return restricted === null || restricted.includes(model);
}

/** Maps a requested name through the key's aliases to the id the upstream receives. */
export function resolveAlias(key: ProviderKey, requested: string): string {
  return Object.hasOwn(key.aliases, requested) ? (key.aliases[requested] ?? requested) : requested;
}

/** The models a provider config allows: `["*"]` = the catalog's models, `[]` = none, else the exact list. */
export function allowedModelsOfConfig(config: ProviderConfig, catalog: ModelCatalog): readonly string[] {
  if (isWildcard(config.allowedModels)) return catalog.modelsOf(config.provider);
  return config.allowedModels.map((entry) => stripProviderPrefix(entry, config.provider));
}

/** Whether a provider config allows `model` (exact, case-sensitive). */
export function configAllowsModel(config: ProviderConfig, model: string, catalog: ModelCatalog): boolean {
  // allowedModelsOfConfig(...).includes(model), without building the list on the request path.
  if (isWildcard(config.allowedModels)) return catalog.hasModel(config.provider, model);
  return config.allowedModels.some((entry) => stripProviderPrefix(entry, config.provider) === model);
}
