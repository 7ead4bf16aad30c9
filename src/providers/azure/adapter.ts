/**
 * Azure OpenAI: per-key endpoint, model -> deployment mapping, the `api-version` query and an
 * `api-key` header. network_config.base_url, when set, replaces every key's endpoint (to reach a proxy
 * or a test double).
 */
import type { Dispatcher } from "undici";
import { GatewayError } from "../../errors.js";
import { createOpenAiCompatibleAdapter } from "../openai-compatible/adapter.js";
import type { OpenAiCompatibleProfile } from "../openai-compatible/profile.js";
import type { AzureKeyConfig, ProviderAdapter, ProviderConfig, ProviderKey } from "../types.js";

/** Used when a key names no api-version. */
export const AZURE_DEFAULT_API_VERSION = "2024-10-21";

function azureConfig(provider: string, key: ProviderKey): AzureKeyConfig {
  if (!key.azure) {
    throw new GatewayError("failed_precondition", `provider ${provider} key ${key.id} has no azure_key_config: set its endpoint and deployments`, {
      type: "gateway_provider_misconfigured",
      field: `providers.${provider}.keys.${key.id}.azure_key_config`,
    });
  }
  return key.azure;
}

/** The deployment serving `model`: the key's mapping, else the model id itself. */
export function azureDeployment(azure: AzureKeyConfig, model: string): string {
  return azure.deployments[model] ?? model;
}

function azureProfile(config: ProviderConfig): OpenAiCompatibleProfile {
  const name = config.name;
  return {
    name,
    origins: () => (config.baseUrl ? [config.baseUrl] : config.keys.flatMap((key) => (key.azure ? [key.azure.endpoint] : []))),
    target(operation, model, key) {
      const azure = azureConfig(name, key);
      const base = (config.baseUrl ?? azure.endpoint).replace(/\/+$/, "");
      const query = `?api-version=${encodeURIComponent(azure.apiVersion || AZURE_DEFAULT_API_VERSION)}`;
      const headers = { "api-key": key.value };
      const deployment = azureDeployment(azure, model ?? "");
      if (operation === "chat") {
        return { url: `${base}/openai/deployments/${encodeURIComponent(deployment)}/chat/completions${query}`, headers };
      }
      if (operation === "embeddings") {
        return { url: `${base}/openai/deployments/${encodeURIComponent(deployment)}/embeddings${query}`, headers };
      }
      if (operation === "responses") return { url: `${base}/openai/responses${query}`, headers, model: deployment };
      return { url: `${base}/openai/models${query}`, headers };
    },
    // The data-plane model list shows base models, not this key's deployments: the deployments map is the truth.
    staticModels(key) {
      const azure = azureConfig(name, key);
      return Object.keys(azure.deployments).map((id) => ({ id, ownedBy: "azure" }));
    },
  };
}

/** Creates the Azure OpenAI adapter. */
export function createAzureAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  return createOpenAiCompatibleAdapter(azureProfile(config), dispatcher);
}
