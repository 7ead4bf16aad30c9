/** Groq: OpenAI-compatible under /openai. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** The default upstream when network_config.base_url is not set. */
export const GROQ_BASE_URL = "https://api.groq.com/openai";

/** Creates the groq adapter; `config.baseUrl` overrides the default upstream. */
export function createGroqAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, GROQ_BASE_URL), dispatcher);
}
