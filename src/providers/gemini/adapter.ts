/**
 * Google's Generative Language API (Gemini with an API key in x-goog-api-key), speaking OpenAI chat to
 * the gateway through the generateContent translation Vertex shares. Responses are bridged onto chat.
 */
import type { Dispatcher } from "undici";
import { isObject } from "../chat-translation/chat-input.js";
import { wantsUsage } from "../chat-translation/chat-output.js";
import { embeddingDimensions, embeddingsResult, embeddingTexts, vectorOf } from "../embeddings/embeddings-io.js";
import { providerStream } from "../http/provider-stream.js";
import { getCall, joinUrl, postCall, send, sendJson, type UpstreamCall } from "../http/upstream-http.js";
import { ProviderError } from "../provider-error.js";
import { adapterTransport, translatedAdapter, type TranslatedCalls } from "../translated-adapter.js";
import type { CallOptions, ChatRequest, EmbeddingsRequest, JsonObject, ProviderAdapter, ProviderConfig, ProviderKey, ProviderModel } from "../types.js";
import { fromGenerateContentResponse, GenerateContentStreamTranslation, geminiUsage, toGenerateContentRequest } from "./generate-content.js";

/** The default upstream when network_config.base_url is not set. */
export const GEMINI_BASE_URL = "https://generativelanguage.googleapis.com";

/** A model id as the URL names it: `models/<id>` and `<id>` are the same model. */
export function geminiModelPath(model: string): string {
  return encodeURIComponent(model.replace(/^models\//, ""));
}

/** Gemini answers a bad API key with a 400: it is a rejected credential, so another key may work. */
function keyRejected(err: unknown): unknown {
  if (err instanceof ProviderError && err.upstreamStatus === 400 && /API key not valid|API_KEY_INVALID/.test(err.message)) {
    return new ProviderError(err.provider, 400, "provider_auth", err.message, err);
  }
  return err;
}

/** Creates the Gemini adapter, with its own keep-alive pool unless a dispatcher is given. */
export function createGeminiAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  const transport = adapterTransport(dispatcher);
  const agent = transport.agent;
  const name = config.name;
  const base = config.baseUrl ?? GEMINI_BASE_URL;
  const headers = (key: ProviderKey): Record<string, string> => ({ "x-goog-api-key": key.value });

  const post = (model: string, method: string, body: JsonObject, options: CallOptions): UpstreamCall =>
    postCall(joinUrl(base, `/v1beta/models/${geminiModelPath(model)}:${method}`), headers(options.key), body, options);

  const calls: TranslatedCalls = {
    async chat(req: ChatRequest, options: CallOptions) {
      const res = await sendJson(agent, name, post(req.model, "generateContent", toGenerateContentRequest(req), options)).catch((err: unknown) => {
        throw keyRejected(err);
      });
      return { status: res.status, body: fromGenerateContentResponse(res.body, req.model, name, res.status), usage: geminiUsage(res.body["usageMetadata"]) };
    },

    async chatStream(req: ChatRequest, options: CallOptions) {
      const res = await send(agent, name, post(req.model, "streamGenerateContent?alt=sse", toGenerateContentRequest(req), options)).catch((err: unknown) => {
        throw keyRejected(err);
      });
      const translation = new GenerateContentStreamTranslation(name, req.model, wantsUsage(req));
      return providerStream(name, res, options.signal, (events) => translation.translate(events), () => translation.usage());
    },

    async embeddings(req: EmbeddingsRequest, options: CallOptions) {
      const texts = embeddingTexts(req, name);
      const dimensions = embeddingDimensions(req);
      const model = `models/${req.model.replace(/^models\//, "")}`;
      const requests = texts.map((text) => ({ model, content: { parts: [{ text }] }, ...(dimensions !== null ? { outputDimensionality: dimensions } : {}) }));
      const res = await sendJson(agent, name, post(req.model, "batchEmbedContents", { requests }, options)).catch((err: unknown) => {
        throw keyRejected(err);
      });
      const embeddings = Array.isArray(res.body["embeddings"]) ? res.body["embeddings"] : [];
      // The API reports no token counts for embeddings.
      return embeddingsResult(req, embeddings.map((e) => vectorOf(isObject(e) ? e["values"] : undefined, name)), 0);
    },

    async listModels(key, options = {}): Promise<ProviderModel[]> {
      const { body } = await sendJson(agent, name, getCall(joinUrl(base, "/v1beta/models?pageSize=1000"), headers(key), options));
      const models = Array.isArray(body["models"]) ? body["models"] : [];
      return models
        .filter((m): m is JsonObject => isObject(m) && typeof m["name"] === "string")
        .map((m) => ({ id: (m["name"] as string).replace(/^models\//, ""), ownedBy: "google" }));
    },
  };
  return translatedAdapter(name, transport, calls, () => [base]);
}
