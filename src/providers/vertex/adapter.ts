/**
 * Google Vertex AI, authenticated with each key's service account (vertex_key_config): Gemini models
 * through generateContent (the translation the gemini provider uses), and Anthropic's Claude models
 * through rawPredict with Anthropic Messages bodies (the anthropic provider's translation, with Vertex's
 * anthropic_version and the model in the URL). Responses are bridged onto chat.
 */
import type { Dispatcher } from "undici";
import { anthropicUsage, toChatCompletion } from "../anthropic/response-translation.js";
import { toAnthropicRequest } from "../anthropic/request-translation.js";
import { createChunkTranslator } from "../anthropic/stream-translation.js";
import { isObject } from "../chat-translation/chat-input.js";
import { configuredModels } from "../configured-models.js";
import { embeddingDimensions, embeddingsResult, embeddingTexts, vectorOf } from "../embeddings/embeddings-io.js";
import { count } from "../usage.js";
import { wantsUsage } from "../chat-translation/chat-output.js";
import { fromGenerateContentResponse, GenerateContentStreamTranslation, geminiUsage, toGenerateContentRequest } from "../gemini/generate-content.js";
import { providerStream } from "../http/provider-stream.js";
import { joinUrl, postCall, send, sendJson, type UpstreamCall } from "../http/upstream-http.js";
import { adapterTransport, keyBlock, translatedAdapter } from "../translated-adapter.js";
import type { CallOptions, ChatRequest, EmbeddingsRequest, JsonObject, ProviderAdapter, ProviderConfig, ProviderKey, ProviderModel, ProviderResult, ProviderStream, VertexKeyConfig } from "../types.js";
import { AccessTokens } from "./access-tokens.js";

/** The anthropic_version Claude on Vertex requires in the body. */
export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";

/** The regional endpoint (or the global one). */
export function vertexBaseUrl(region: string): string {
  return region === "global" ? "https://aiplatform.googleapis.com" : `https://${region}-aiplatform.googleapis.com`;
}

/** Which publisher serves a model: Anthropic's Claude models, else Google's. */
export function vertexPublisher(model: string): "anthropic" | "google" {
  return /^claude/.test(model) ? "anthropic" : "google";
}

/** A model id as a path segment; `@` (Claude versions: `claude-sonnet-4-5@20250929`) stays as Vertex documents it. */
function modelSegment(model: string): string {
  return encodeURIComponent(model).replace(/%40/g, "@");
}

function vertexConfig(provider: string, key: ProviderKey): VertexKeyConfig {
  return keyBlock(provider, key, "vertex_key_config", key.vertex, "project_id, region and auth_credentials");
}

/** The Anthropic Messages body as Vertex takes it: no model, Vertex's anthropic_version. */
function vertexAnthropicBody(req: ChatRequest, stream: boolean): JsonObject {
  const { model: _model, ...body } = toAnthropicRequest(req);
  return { ...body, anthropic_version: VERTEX_ANTHROPIC_VERSION, ...(stream ? { stream: true } : {}) };
}

/** Creates the Vertex adapter, with its own keep-alive pool unless a dispatcher is given. */
export function createVertexAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  const transport = adapterTransport(dispatcher);
  const agent = transport.agent;
  const name = config.name;
  const tokens = new AccessTokens(name, agent);

  /** A bearer-authenticated POST to the model's `method` (`generateContent`, `rawPredict`, ...). */
  async function modelCall(model: string, method: string, body: JsonObject, options: CallOptions): Promise<UpstreamCall> {
    const vertex = vertexConfig(name, options.key);
    const token = await tokens.token(vertex.credentials, options);
    const path = `/v1/projects/${encodeURIComponent(vertex.projectId)}/locations/${vertex.region}/publishers/${vertexPublisher(model)}/models/${modelSegment(model)}:${method}`;
    return postCall(joinUrl(config.baseUrl ?? vertexBaseUrl(vertex.region), path), { authorization: `Bearer ${token}` }, body, options);
  }

  async function chat(req: ChatRequest, options: CallOptions): Promise<ProviderResult> {
    if (vertexPublisher(req.model) === "anthropic") {
      const res = await sendJson(agent, name, await modelCall(req.model, "rawPredict", vertexAnthropicBody(req, false), options));
      return { status: res.status, body: toChatCompletion(res.body, req.model, name, res.status), usage: anthropicUsage(res.body["usage"]) };
    }
    const res = await sendJson(agent, name, await modelCall(req.model, "generateContent", toGenerateContentRequest(req), options));
    return { status: res.status, body: fromGenerateContentResponse(res.body, req.model, name, res.status), usage: geminiUsage(res.body["usageMetadata"]) };
  }

  async function chatStream(req: ChatRequest, options: CallOptions): Promise<ProviderStream> {
    if (vertexPublisher(req.model) === "anthropic") {
      const res = await send(agent, name, await modelCall(req.model, "streamRawPredict", vertexAnthropicBody(req, true), options));
      const translator = createChunkTranslator(name, req.model, wantsUsage(req));
      return providerStream(name, res, options.signal, translator.translate, translator.usage);
    }
    const res = await send(agent, name, await modelCall(req.model, "streamGenerateContent?alt=sse", toGenerateContentRequest(req), options));
    const translation = new GenerateContentStreamTranslation(name, req.model, wantsUsage(req));
    return providerStream(name, res, options.signal, (events) => translation.translate(events), () => translation.usage());
  }

  async function embeddings(req: EmbeddingsRequest, options: CallOptions): Promise<ProviderResult> {
    const texts = embeddingTexts(req, name);
    const dimensions = embeddingDimensions(req);
    const body = { instances: texts.map((content) => ({ content })), ...(dimensions !== null ? { parameters: { outputDimensionality: dimensions } } : {}) };
    const res = await sendJson(agent, name, await modelCall(req.model, "predict", body, options));
    const predictions = Array.isArray(res.body["predictions"]) ? res.body["predictions"] : [];
    let tokens = 0;
    const vectors = predictions.map((prediction) => {
      const embedding = isObject(prediction) && isObject(prediction["embeddings"]) ? prediction["embeddings"] : {};
      if (isObject(embedding["statistics"])) tokens += count(embedding["statistics"]["token_count"]);
      return vectorOf(embedding["values"], name);
    });
    return embeddingsResult(req, vectors, tokens);
  }

  async function listModels(key: ProviderKey): Promise<ProviderModel[]> {
    vertexConfig(name, key);
    return configuredModels(key, "vertex");
  }

  const origins = (): string[] =>
    config.baseUrl ? [config.baseUrl] : [...new Set(config.keys.flatMap((key) => (key.vertex ? [vertexBaseUrl(key.vertex.region)] : [])))];
  return translatedAdapter(name, transport, { chat, chatStream, embeddings, listModels }, origins);
}
