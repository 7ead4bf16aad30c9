/** OpenAI: the reference of the OpenAI-compatible family. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** The default upstream when network_config.base_url is not set. */
export const OPENAI_BASE_URL = "https://api.openai.com";

/** Creates the openai adapter; `config.baseUrl` overrides the default upstream. */
export function createOpenAiAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, OPENAI_BASE_URL), dispatcher);
}
