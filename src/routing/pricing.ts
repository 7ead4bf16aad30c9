/**
 * Prices a request from its token usage with this lookup chain: `model|provider|mode`, then the
 * provider's parent cloud provider, then without a `vendor/` prefix, then with one, then responses mode
 * as chat; when the upstream id has no price the alias the caller named is tried the same way.
 */
import { BUNDLED_PRICES, type TokenPrice } from "./bundled-prices.js";
import type { PriceEntry } from "./pricing-data.js";

/** Which API the request used. */
export type PricingMode = "chat" | "responses" | "embedding";

/**
 * Providers whose models are priced like their parent cloud's: Azure OpenAI bills as OpenAI, the Gemini
 * API as Vertex, the datasheets list many models only under the cloud that hosts them.
 */
const PARENT_PROVIDER: Readonly<Record<string, string>> = { azure: "openai", gemini: "vertex" };

/** Vendor prefixes aggregators put on model ids (`openai/gpt-4o`). */
const VENDORS = ["openai", "anthropic", "mistral", "meta-llama", "google", "deepseek", "x-ai", "qwen"] as const;

/** The bundled datasheet as entries. */
export function bundledPriceEntries(): PriceEntry[] {
  return Object.entries(BUNDLED_PRICES).map(([key, price]) => {
    const [model = "", provider = "", mode = "chat"] = key.split("|");
    return { provider, model, mode, ...price };
  });
}

/** Lookups a table remembers before it starts over: model names come from requests, so their number is unbounded. */
const MAX_REMEMBERED = 4096;

/** A price list with the fallback chain. */
export class PriceTable {
  readonly #prices: Readonly<Record<string, TokenPrice>>;
  /**
   * What the chain found, by mode and provider, then model: every answered request is priced, and the chain
   * builds up to a score of keys to find one price (or none), the same each time for the same three names.
   */
  readonly #found: Readonly<Record<PricingMode, Map<string, Map<string, TokenPrice | null>>>> = { chat: new Map(), responses: new Map(), embedding: new Map() };
  #remembered = 0;

  constructor(prices: Readonly<Record<string, TokenPrice>> = BUNDLED_PRICES) {
    this.#prices = prices;
  }

  /** A table over datasheet entries (a later entry for the same `model|provider|mode` wins). */
  static fromEntries(entries: readonly PriceEntry[]): PriceTable {
    const prices: Record<string, TokenPrice> = Object.create(null) as Record<string, TokenPrice>;
    for (const entry of entries) prices[`${entry.model}|${entry.provider}|${entry.mode}`] = entry;
    return new PriceTable(prices);
  }

  #exact(model: string, provider: string, mode: PricingMode): TokenPrice | null {
    const key = `${model}|${provider}|${mode}`;
    return Object.hasOwn(this.#prices, key) ? (this.#prices[key] ?? null) : null;
  }

  #inMode(model: string, provider: string, mode: PricingMode): TokenPrice | null {
    const providers = [provider, ...(PARENT_PROVIDER[provider] ? [PARENT_PROVIDER[provider]] : [])];
    for (const p of providers) {
      const direct = this.#exact(model, p, mode);
      if (direct) return direct;
    }
    const slash = model.indexOf("/");
    if (slash > 0) {
      const bare = model.slice(slash + 1);
      const vendor = model.slice(0, slash);
      // An aggregator's `openai/gpt-4o` is priced as the vendor's own model, or under the aggregator.
      const found = this.#exact(bare, vendor, mode) ?? providers.map((p) => this.#exact(bare, p, mode)).find((x) => x !== null) ?? null;
      if (found) return found;
    } else {
      for (const p of providers) {
        for (const vendor of VENDORS) {
          // Aggregators write `vendor/model`, cloud hosts such as Bedrock `vendor.model`.
          const found = this.#exact(`${vendor}/${model}`, p, mode) ?? this.#exact(`${vendor}.${model}`, p, mode);
          if (found) return found;
        }
      }
    }
    return null;
  }

  /** The price of a model at a provider, or null when the chain finds none. */
  lookup(provider: string, model: string, mode: PricingMode): TokenPrice | null {
    const byProvider = this.#found[mode];
    let byModel = byProvider.get(provider);
    const known = byModel?.get(model);
    if (known !== undefined) return known;
    const price = this.#inMode(model, provider, mode) ?? (mode === "responses" ? this.#inMode(model, provider, "chat") : null);
    if (this.#remembered >= MAX_REMEMBERED) {
      for (const remembered of Object.values(this.#found)) remembered.clear();
      this.#remembered = 0;
      byModel = undefined;
    }
    if (byModel === undefined) {
      byModel = new Map();
      byProvider.set(provider, byModel);
    }
    byModel.set(model, price);
    this.#remembered++;
    return price;
  }

  /** The model's `max_output_tokens` from the datasheet, or null when it gives none. */
  maxOutputTokens(provider: string, model: string, mode: PricingMode): number | null {
    const price: (TokenPrice & { max_output_tokens?: number }) | null = this.lookup(provider, model, mode);
    const max = price?.max_output_tokens;
    return typeof max === "number" && max > 0 ? max : null;
  }

  /** USD cost of a request, or null when no price is known (callers warn: the request spent nothing). */
  cost(target: { provider: string; upstreamModel: string; alias: string | null; mode: PricingMode }, usage: { input_tokens: number; output_tokens: number }): number | null {
    const price = this.lookup(target.provider, target.upstreamModel, target.mode) ?? (target.alias ? this.lookup(target.provider, target.alias, target.mode) : null);
    if (price === null) return null;
    return usage.input_tokens * price.input_cost_per_token + usage.output_tokens * price.output_cost_per_token;
  }
}
