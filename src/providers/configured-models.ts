/** The models a key is configured for, for providers whose model list is not on the API the gateway calls. */
import type { ProviderKey, ProviderModel } from "./types.js";

/** The key's `models` (without "*") and the ids its aliases map to. */
export function configuredModels(key: ProviderKey, ownedBy: string): ProviderModel[] {
  const ids = new Set([...key.models.filter((m) => m !== "*"), ...Object.values(key.aliases)]);
  return [...ids].map((id) => ({ id, ownedBy }));
}
