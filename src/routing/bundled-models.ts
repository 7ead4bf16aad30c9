/**
 * A small offline table of well-known model ids per provider, so `allowed_models: ["*"]` and bare-model
 * resolution work before a pricing datasheet or a list-models answer is known. Kept deliberately short:
 * the datasheet, list-models and provider keys' `models` lists extend it.
 */

/** Provider name -> model ids the gateway knows without asking anyone. */
export const BUNDLED_MODELS: Readonly<Record<string, readonly string[]>> = {
  openai: ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o3-mini", "o4-mini"],
  anthropic: [
    "claude-opus-4-20250514",
    "claude-sonnet-4-20250514",
    "claude-3-7-sonnet-latest",
    "claude-3-5-sonnet-latest",
    "claude-3-5-haiku-latest",
  ],
  groq: ["llama-3.1-8b-instant", "llama-3.3-70b-versatile"],
  mistral: ["mistral-large-latest", "mistral-small-latest", "codestral-latest"],
};
