/** OpenRouter: OpenAI-compatible under /api. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** The default upstream when network_config.base_url is not set. */
export const OPENROUTER_BASE_URL = "https://openrouter.ai/api";

/** Creates the openrouter adapter; `config.baseUrl` overrides the default upstream. */
export function createOpenRouterAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, OPENROUTER_BASE_URL), dispatcher);
}
