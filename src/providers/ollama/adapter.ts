/** Ollama: its OpenAI-compatible API on the local default port; keys may be empty. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** The default upstream when network_config.base_url is not set. */
export const OLLAMA_BASE_URL = "http://127.0.0.1:11434";

/** Creates the ollama adapter; `config.baseUrl` overrides the default upstream. */
export function createOllamaAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, OLLAMA_BASE_URL), dispatcher);
}
