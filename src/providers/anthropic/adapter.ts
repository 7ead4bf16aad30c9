/**
 * Anthropic over the Messages API (x-api-key, anthropic-version), speaking OpenAI chat to the gateway.
 * The Responses API is served by bridging it onto chat; Messages API callers are forwarded as they are.
 */
import type { Dispatcher } from "undici";
import { providerStream } from "../http/provider-stream.js";
import { getCall, joinUrl, postCall, send, sendJson, type UpstreamCall } from "../http/upstream-http.js";
import { UpstreamPool } from "../http/upstream-pool.js";
import { noEmbeddings } from "../embeddings/embeddings-io.js";
import { bridgeResponses, bridgeResponsesStream } from "../responses-bridge/bridge.js";
import type { CallOptions, ChatRequest, JsonObject, MessagesRequest, ProviderAdapter, ProviderConfig, ProviderKey, ProviderModel } from "../types.js";
import { passthroughBody, PassthroughEvents } from "./passthrough.js";
import { toAnthropicRequest } from "./request-translation.js";
import { anthropicUsage, toChatCompletion } from "./response-translation.js";
import { createChunkTranslator } from "./stream-translation.js";

/** The default upstream when network_config.base_url is not set. */
export const ANTHROPIC_BASE_URL = "https://api.anthropic.com";
/** The Messages API version this translation is written against. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** The provider's own headers; `version` is the caller's anthropic-version when it is forwarded. */
function headers(key: ProviderKey, version = ANTHROPIC_VERSION): Record<string, string> {
  return { "x-api-key": key.value, "anthropic-version": version };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Creates the Anthropic adapter, with its own keep-alive pool unless a dispatcher is given. */
export function createAnthropicAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  const pool = dispatcher ? null : new UpstreamPool();
  const agent: Dispatcher = pool === null ? (dispatcher as Dispatcher) : pool.agent;
  const name = config.name;
  const base = config.baseUrl ?? ANTHROPIC_BASE_URL;

  const messages = (body: JsonObject | Uint8Array, options: CallOptions, path = "/v1/messages", version?: string): UpstreamCall =>
    postCall(joinUrl(base, path), headers(options.key, version), body, options);

  /** A call of the Messages API itself: the caller's anthropic-version, when allowed through, is the one sent. */
  const forwarded = (req: MessagesRequest | JsonObject, options: CallOptions, path?: string): UpstreamCall =>
    messages(passthroughBody(req, String(req["model"]), options.rawBody), options, path, options.headers?.["anthropic-version"]);

  const adapter: ProviderAdapter = {
    name,

    async chat(req: ChatRequest, options: CallOptions) {
      const res = await sendJson(agent, name, messages(toAnthropicRequest(req), options));
      return { status: res.status, body: toChatCompletion(res.body, req.model, name, res.status), usage: anthropicUsage(res.body["usage"]) };
    },

    async chatStream(req: ChatRequest, options: CallOptions) {
      const streamOptions = req["stream_options"];
      const includeUsage = isObject(streamOptions) && streamOptions["include_usage"] === true;
      const res = await send(agent, name, messages({ ...toAnthropicRequest(req), stream: true }, options));
      const translator = createChunkTranslator(name, req.model, includeUsage);
      return providerStream(name, res, options.signal, translator.translate, translator.usage);
    },

    async messages(req, options) {
      const res = await sendJson(agent, name, forwarded(req, options));
      return { status: res.status, body: res.body, raw: res.text, usage: anthropicUsage(res.body["usage"]) };
    },

    async messagesStream(req, options) {
      const res = await send(agent, name, forwarded(req, options));
      const events = new PassthroughEvents(name);
      return providerStream(name, res, options.signal, (upstream) => events.relay(upstream), () => events.usage());
    },

    async countTokens(req, options) {
      return (await sendJson(agent, name, forwarded(req, options, "/v1/messages/count_tokens"))).body;
    },

    responses: (req, options) => bridgeResponses(adapter, req, options),
    responsesStream: (req, options) => bridgeResponsesStream(adapter, req, options),

    embeddings: async () => {
      throw noEmbeddings(name);
    },

    async listModels(key, options = {}): Promise<ProviderModel[]> {
      const { body } = await sendJson(agent, name, getCall(joinUrl(base, "/v1/models?limit=1000"), headers(key), options));
      const data = Array.isArray(body["data"]) ? body["data"] : [];
      return data.filter((m): m is JsonObject => isObject(m) && typeof m["id"] === "string").map((m) => ({ id: m["id"] as string, ownedBy: "anthropic" }));
    },

    async preconnect(connections) {
      return pool === null ? [] : pool.preconnect([base], connections);
    },

    async close() {
      await pool?.close();
    },
  };
  return adapter;
}
