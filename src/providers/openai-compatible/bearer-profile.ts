/** The common profile: `<base>/v1/...` paths and `Authorization: Bearer <key>`. */
import { GatewayError } from "../../errors.js";
import { joinUrl } from "../http/upstream-http.js";
import type { OpenAiCompatibleProfile, OpenAiOperation } from "./profile.js";

const PATHS: Record<OpenAiOperation, string> = {
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
  embeddings: "/v1/embeddings",
  models: "/v1/models",
};

/**
 * A profile for a provider at `baseUrl` (network_config.base_url) or else `defaultBaseUrl`; with
 * neither, every call fails with a message asking for a base URL. An empty key value sends no
 * Authorization header (local servers such as Ollama need none).
 */
export function bearerProfile(name: string, baseUrl: string | null, defaultBaseUrl: string | null): OpenAiCompatibleProfile {
  const base = baseUrl ?? defaultBaseUrl;
  // The URLs depend only on the operation: joined once, not per request.
  const urls = base
    ? { chat: joinUrl(base, PATHS.chat), responses: joinUrl(base, PATHS.responses), embeddings: joinUrl(base, PATHS.embeddings), models: joinUrl(base, PATHS.models) }
    : null;
  // A key's headers are the same on every call: made once per key object (a changed key is a new object).
  const keyHeaders = new WeakMap<object, Record<string, string>>();
  return {
    name,
    origins: () => (base ? [base] : []),
    target(operation, _model, key) {
      if (!urls) {
        throw new GatewayError("failed_precondition", `provider ${name} has no base URL: set network_config.base_url`, {
          type: "gateway_provider_misconfigured",
          field: `providers.${name}.network_config.base_url`,
        });
      }
      let headers = keyHeaders.get(key);
      if (headers === undefined) {
        headers = key.value ? { authorization: `Bearer ${key.value}` } : {};
        keyHeaders.set(key, headers);
      }
      return { url: urls[operation], headers };
    },
  };
}
