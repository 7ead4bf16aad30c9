/** Provider keys and small waits for the provider adapter tests. */
import type { ProviderKey } from "../../src/providers/types.js";

/** A provider key with test defaults. */
export function providerKey(overrides: Partial<ProviderKey> = {}): ProviderKey {
  return { id: "k1", name: "main", value: "sk-test-1", models: [], aliases: {}, weight: 1, azure: null, ...overrides };
}

/** Polls `condition` every 10 ms, at most `attempts` times; true once it holds. */
export async function eventually(condition: () => boolean, attempts = 300): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return condition();
}
