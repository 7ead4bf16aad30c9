/** Chooses the adapter for a configured provider by its name. */
import type { Dispatcher } from "undici";
import { GatewayError } from "../errors.js";
import { createAnthropicAdapter } from "./anthropic/adapter.js";
import { createAzureAdapter } from "./azure/adapter.js";
import { createBedrockAdapter } from "./bedrock/adapter.js";
import { createCustomAdapter } from "./custom/adapter.js";
import { createGeminiAdapter } from "./gemini/adapter.js";
import { createGroqAdapter } from "./groq/adapter.js";
import { createMistralAdapter } from "./mistral/adapter.js";
import { createOllamaAdapter } from "./ollama/adapter.js";
import { createOpenAiAdapter } from "./openai/adapter.js";
import { createOpenRouterAdapter } from "./openrouter/adapter.js";
import { createVertexAdapter } from "./vertex/adapter.js";
import type { ProviderAdapter, ProviderConfig } from "./types.js";

type Factory = (config: ProviderConfig, dispatcher?: Dispatcher) => ProviderAdapter;

const FACTORIES: Record<string, Factory> = {
  openai: createOpenAiAdapter,
  azure: createAzureAdapter,
  groq: createGroqAdapter,
  mistral: createMistralAdapter,
  openrouter: createOpenRouterAdapter,
  ollama: createOllamaAdapter,
  anthropic: createAnthropicAdapter,
  bedrock: createBedrockAdapter,
  gemini: createGeminiAdapter,
  vertex: createVertexAdapter,
  custom: createCustomAdapter,
};

/** Provider names with a built-in adapter; any other name is a custom OpenAI-compatible provider. */
export const BUILT_IN_PROVIDERS: readonly string[] = Object.keys(FACTORIES);

/**
 * The adapter for `config`: a built-in by name, else a custom OpenAI-compatible provider, which needs a
 * base URL. A shared `dispatcher` lets several adapters use one set of keep-alive pools.
 */
export function createProviderAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  const factory = FACTORIES[config.name];
  if (factory) return factory(config, dispatcher);
  if (!config.baseUrl) {
    throw new GatewayError(
      "invalid_argument",
      `provider ${config.name} is not built in (${BUILT_IN_PROVIDERS.join(", ")}); a custom OpenAI-compatible provider needs network_config.base_url`,
      { field: `providers.${config.name}.network_config.base_url`, type: "invalid_provider" },
    );
  }
  return createCustomAdapter(config, dispatcher);
}
