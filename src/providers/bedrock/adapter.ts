/**
 * AWS Bedrock over the Converse and ConverseStream APIs, SigV4-signed with each key's
 * bedrock_key_config, speaking OpenAI chat to the gateway. The endpoint is the key region's
 * bedrock-runtime host unless network_config.base_url replaces it. Responses are bridged onto chat.
 */
import type { Dispatcher } from "undici";
import { wantsUsage } from "../chat-translation/chat-output.js";
import { configuredModels } from "../configured-models.js";
import { embeddingDimensions, embeddingsResult, embeddingTexts, vectorOf } from "../embeddings/embeddings-io.js";
import { count } from "../usage.js";
import { providerStream } from "../http/provider-stream.js";
import { joinUrl, postCall, send, sendJson, type UpstreamCall } from "../http/upstream-http.js";
import { adapterTransport, keyBlock, translatedAdapter, type TranslatedCalls } from "../translated-adapter.js";
import type { BedrockKeyConfig, CallOptions, ChatRequest, EmbeddingsRequest, JsonObject, ProviderAdapter, ProviderConfig, ProviderKey } from "../types.js";
import { toConverseRequest } from "./converse-request.js";
import { converseUsage, ConverseStreamTranslation, fromConverseResponse } from "./converse-response.js";
import { decodeEventStream } from "./event-stream.js";
import { signedHeaders } from "./sigv4.js";

/** How many Titan embedding calls one request runs at once. */
const TITAN_PARALLEL_CALLS = 8;

/** The runtime endpoint of a region. */
export function bedrockRuntimeUrl(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com`;
}

function bedrockConfig(provider: string, key: ProviderKey): BedrockKeyConfig {
  return keyBlock(provider, key, "bedrock_key_config", key.bedrock, "access_key, secret_key and region");
}

/** Creates the Bedrock adapter, with its own keep-alive pool unless a dispatcher is given. */
export function createBedrockAdapter(config: ProviderConfig, dispatcher?: Dispatcher): ProviderAdapter {
  const transport = adapterTransport(dispatcher);
  const agent = transport.agent;
  const name = config.name;

  /** A signed POST of `body` to `/model/{model}/{action}`. */
  async function signedPost(model: string, action: string, body: JsonObject, options: CallOptions, accept: string): Promise<UpstreamCall> {
    const aws = bedrockConfig(name, options.key);
    const url = joinUrl(config.baseUrl ?? bedrockRuntimeUrl(aws.region), `/model/${encodeURIComponent(model)}/${action}`);
    const text = JSON.stringify(body);
    const headers = await signedHeaders(aws, "POST", url, { "content-type": "application/json", accept }, text);
    return postCall(url, headers, text, options);
  }

  const calls: TranslatedCalls = {
    async chat(req: ChatRequest, options: CallOptions) {
      const res = await sendJson(agent, name, await signedPost(req.model, "converse", toConverseRequest(req), options, "application/json"));
      return { status: res.status, body: fromConverseResponse(res.body, req.model, name, res.status), usage: converseUsage(res.body["usage"]) };
    },

    async chatStream(req: ChatRequest, options: CallOptions) {
      const res = await send(agent, name, await signedPost(req.model, "converse-stream", toConverseRequest(req), options, "application/vnd.amazon.eventstream"));
      const translation = new ConverseStreamTranslation(name, req.model, wantsUsage(req));
      return providerStream(name, res, options.signal, (events) => translation.translate(events), () => translation.usage(), decodeEventStream);
    },

    async embeddings(req: EmbeddingsRequest, options: CallOptions) {
      const texts = embeddingTexts(req, name);
      if (/^cohere\.embed/.test(req.model)) {
        const res = await sendJson(agent, name, await signedPost(req.model, "invoke", { texts, input_type: "search_document" }, options, "application/json"));
        const vectors = Array.isArray(res.body["embeddings"]) ? res.body["embeddings"].map((v) => vectorOf(v, name)) : [];
        return embeddingsResult(req, vectors, 0);
      }
      // Titan embeds one text per call: a few calls at a time, the answers kept in input order.
      const dimensions = embeddingDimensions(req);
      const vectors: number[][] = [];
      let tokens = 0;
      for (let start = 0; start < texts.length; start += TITAN_PARALLEL_CALLS) {
        const batch = texts.slice(start, start + TITAN_PARALLEL_CALLS);
        const answers = await Promise.all(
          batch.map(async (text) => sendJson(agent, name, await signedPost(req.model, "invoke", { inputText: text, ...(dimensions !== null ? { dimensions } : {}) }, options, "application/json"))),
        );
        for (const { body } of answers) {
          vectors.push(vectorOf(body["embedding"], name));
          tokens += count(body["inputTextTokenCount"]);
        }
      }
      return embeddingsResult(req, vectors, tokens);
    },

    // Bedrock's model list lives on another (control-plane) API: the keys' configuration is the list.
    async listModels(key) {
      bedrockConfig(name, key);
      return configuredModels(key, "bedrock");
    },
  };
  const origins = (): string[] =>
    config.baseUrl ? [config.baseUrl] : [...new Set(config.keys.flatMap((key) => (key.bedrock ? [bedrockRuntimeUrl(key.bedrock.region)] : [])))];
  return translatedAdapter(name, transport, calls, origins);
}
