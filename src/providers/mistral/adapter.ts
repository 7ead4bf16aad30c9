/** Mistral: OpenAI-compatible chat completions and model listing. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** The default upstream when network_config.base_url is not set. */
export const MISTRAL_BASE_URL = "https://api.mistral.ai";

/** Creates the mistral adapter; `config.baseUrl` overrides the default upstream. */
export function createMistralAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, MISTRAL_BASE_URL), dispatcher);
}
