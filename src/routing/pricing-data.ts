/**
 * The pricing datasheet format (the shape LiteLLM's `model_prices_and_context_window.json` and Bifrost's
 * datasheet share): one JSON object keyed by `model` or `provider/model`, each entry naming its provider
 * (`provider` or `litellm_provider`), its `mode` and its per-token prices. Parsing checks every field the
 * gateway reads and refuses the whole file on the first wrong one, so a broken download never replaces
 * good prices; fields it does not read are ignored.
 */
import type { TokenPrice } from "./bundled-prices.js";

/** One priced model of one provider in one mode. */
export interface PriceEntry extends TokenPrice {
  provider: string;
  model: string;
  /** chat, responses, embedding, completion, ... as the datasheet writes it. */
  mode: string;
  max_input_tokens?: number;
  max_output_tokens?: number;
  cache_read_input_token_cost?: number;
  cache_creation_input_token_cost?: number;
}

/** A datasheet that cannot be used; the message names the problem and where it is. */
export class PricingDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PricingDataError";
  }
}

/** LiteLLM's file documents its own fields under this key; it prices nothing. */
const SPEC_ENTRY = "sample_spec";

const NUMBER_FIELDS = ["input_cost_per_token", "output_cost_per_token", "max_input_tokens", "max_output_tokens", "cache_read_input_token_cost", "cache_creation_input_token_cost"] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(entry: Record<string, unknown>, field: string, at: string): string | undefined {
  const value = entry[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new PricingDataError(`${at}.${field} must be a string, got ${JSON.stringify(value)}`);
  return value;
}

/** Parses one entry; null for an entry that names no provider (nothing to key it under). */
function parseEntry(key: string, raw: unknown): PriceEntry | null {
  const at = JSON.stringify(key);
  if (!isObject(raw)) throw new PricingDataError(`entry ${at} must be an object, got ${JSON.stringify(raw)?.slice(0, 40) ?? "undefined"}`);
  const provider = optionalString(raw, "provider", `entry ${at}`) ?? optionalString(raw, "litellm_provider", `entry ${at}`);
  const mode = optionalString(raw, "mode", `entry ${at}`) ?? "chat";
  const numbers: Partial<Record<(typeof NUMBER_FIELDS)[number], number>> = {};
  for (const field of NUMBER_FIELDS) {
    const value = raw[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new PricingDataError(`entry ${at}.${field} must be a number >= 0, got ${JSON.stringify(value)}`);
    }
    numbers[field] = value;
  }
  if (provider === undefined || provider === "") return null;
  // `openrouter/openai/gpt-4o` under provider openrouter is openrouter's model `openai/gpt-4o`.
  const model = key.startsWith(`${provider}/`) ? key.slice(provider.length + 1) : key;
  return {
    provider,
    model,
    mode,
    input_cost_per_token: numbers.input_cost_per_token ?? 0,
    output_cost_per_token: numbers.output_cost_per_token ?? 0,
    ...(numbers.max_input_tokens !== undefined ? { max_input_tokens: numbers.max_input_tokens } : {}),
    ...(numbers.max_output_tokens !== undefined ? { max_output_tokens: numbers.max_output_tokens } : {}),
    ...(numbers.cache_read_input_token_cost !== undefined ? { cache_read_input_token_cost: numbers.cache_read_input_token_cost } : {}),
    ...(numbers.cache_creation_input_token_cost !== undefined ? { cache_creation_input_token_cost: numbers.cache_creation_input_token_cost } : {}),
  };
}

/** Parses a datasheet's text; throws PricingDataError naming the first problem. */
export function parsePricingDatasheet(text: string): PriceEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new PricingDataError(`the file is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!isObject(json)) throw new PricingDataError(`the file must be one JSON object keyed by model, got ${Array.isArray(json) ? "an array" : typeof json}`);
  const entries: PriceEntry[] = [];
  for (const [key, raw] of Object.entries(json)) {
    if (key === SPEC_ENTRY) continue;
    const entry = parseEntry(key, raw);
    if (entry !== null) entries.push(entry);
  }
  if (entries.length === 0) throw new PricingDataError("the file prices no model (no entry names a provider)");
  return entries;
}

/** Checks entries read back from the store (written by this code, so a mismatch means a damaged row). */
export function isPriceEntryList(value: unknown): value is PriceEntry[] {
  return Array.isArray(value) && value.every((e) => isObject(e) && typeof e["provider"] === "string" && typeof e["model"] === "string" && typeof e["mode"] === "string" && typeof e["input_cost_per_token"] === "number" && typeof e["output_cost_per_token"] === "number");
}
