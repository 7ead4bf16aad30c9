/** A generic OpenAI-compatible upstream under any provider name; it has no default, so base_url is required. */
import type { Dispatcher } from "undici";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import { bearerProfile } from "../openai-compatible/bearer-profile.js";
import type { ProviderAdapter, ProviderConfig } from "../types.js";

/** Creates a custom OpenAI-compatible adapter; calls fail with a clear message while `config.baseUrl` is null. */
export function createCustomAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(bearerProfile(config.name, config.baseUrl, null), dispatcher);
}
