/**
 * The bundled pricing datasheet, so budgets spend and the catalog works offline.
 * Keys are `model|provider|mode`; prices are USD per token, from the providers' public price lists
 * (standard tier, no caching or batch discounts). A datasheet downloaded from pricing.pricing_url (or
 * its stored copy) replaces it.
 */

/** USD per token of one model. */
export interface TokenPrice {
  input_cost_per_token: number;
  output_cost_per_token: number;
}

const PER_MILLION = 1e-6;

function price(inputPerMillion: number, outputPerMillion: number): TokenPrice {
  return { input_cost_per_token: inputPerMillion * PER_MILLION, output_cost_per_token: outputPerMillion * PER_MILLION };
}

/** `model|provider|mode` -> price. */
export const BUNDLED_PRICES: Readonly<Record<string, TokenPrice>> = {
  "gpt-4o|openai|chat": price(2.5, 10),
  "gpt-4o-mini|openai|chat": price(0.15, 0.6),
  "gpt-4.1|openai|chat": price(2, 8),
  "gpt-4.1-mini|openai|chat": price(0.4, 1.6),
  "gpt-4.1-nano|openai|chat": price(0.1, 0.4),
  "o3|openai|chat": price(2, 8),
  "o3-mini|openai|chat": price(1.1, 4.4),
  "o4-mini|openai|chat": price(1.1, 4.4),
  "claude-opus-4-20250514|anthropic|chat": price(15, 75),
  "claude-sonnet-4-20250514|anthropic|chat": price(3, 15),
  "claude-sonnet-4-5|anthropic|chat": price(3, 15),
  "claude-3-7-sonnet-latest|anthropic|chat": price(3, 15),
  "claude-3-5-sonnet-latest|anthropic|chat": price(3, 15),
  "claude-3-5-haiku-latest|anthropic|chat": price(0.8, 4),
  "llama-3.1-8b-instant|groq|chat": price(0.05, 0.08),
  "llama-3.3-70b-versatile|groq|chat": price(0.59, 0.79),
  "mistral-large-latest|mistral|chat": price(2, 6),
  "mistral-small-latest|mistral|chat": price(0.2, 0.6),
  "codestral-latest|mistral|chat": price(0.3, 0.9),
  // Embedding models: they bill input tokens only. The semantic cache's default embedding model is picked among these.
  "text-embedding-3-small|openai|embedding": price(0.02, 0),
  "text-embedding-3-large|openai|embedding": price(0.13, 0),
  "text-embedding-ada-002|openai|embedding": price(0.1, 0),
  "mistral-embed|mistral|embedding": price(0.1, 0),
};
