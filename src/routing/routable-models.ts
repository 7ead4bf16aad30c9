/**
 * Whether a model name, sent as it is by a caller with a given virtual key, would be routed to a provider
 * and a key: the same routing and key selection a request runs, minus the momentary state (budgets and
 * rate limits count as open, the dice are fixed). Listings use it so that every model they show routes.
 */
import { providerConfigOf, routeRequest } from "./governance-router.js";
import { orderKeys } from "./key-selection.js";
import type { ModelCatalog } from "./model-catalog.js";
import type { ProviderKey, VirtualKey } from "./types.js";

/** What the check reads: the catalog and each configured provider's keys. */
export interface RoutableContext {
  catalog: ModelCatalog;
  keysOf: (provider: string) => readonly ProviderKey[] | undefined;
}

const OPEN_LIMITS = { exceeded: () => null };
const FIRST = (): number => 0;

/** True when a request naming `model` with `key` (null: none) reaches a provider key. */
export function routes(model: string, key: VirtualKey | null, context: RoutableContext): boolean {
  try {
    const { primary } = routeRequest({ model, virtualKey: key }, { catalog: context.catalog, limits: OPEN_LIMITS, random: FIRST });
    const keys = context.keysOf(primary.provider);
    if (keys === undefined) return false;
    const config = key === null ? null : providerConfigOf(key, primary.provider);
    return orderKeys({ provider: primary.provider, model: primary.model, keys, config, catalog: context.catalog, random: FIRST }).length > 0;
  } catch {
    // A refusal of any kind means the name does not route.
    return false;
  }
}
