/**
 * Anthropic Messages SSE events -> OpenAI chat.completion.chunk objects: message_start opens the
 * assistant turn, text and input_json deltas become content and tool_call argument deltas,
 * message_delta carries the finish reason, and message_stop ends it (after a usage chunk when the
 * caller asked for one with stream_options.include_usage).
 */
import { ProviderError } from "../provider-error.js";
import { streamCutShort, streamEventObject } from "../http/upstream-http.js";
import type { SseEvent } from "../http/sse.js";
import type { JsonObject, TokenUsage } from "../types.js";
import { finishReason, openAiUsage, StreamUsage } from "./response-translation.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The failure an Anthropic `error` event reports after the stream began. */
export function midStreamError(provider: string, payload: JsonObject): ProviderError {
  const error = isObject(payload["error"]) ? payload["error"] : {};
  const message = typeof error["message"] === "string" ? error["message"] : "unknown error";
  return new ProviderError(provider, null, "provider_unavailable", `${provider} failed mid-stream (${String(error["type"] ?? "error")}): ${message}`);
}

/** A translator plus the usage it has seen so far. */
export interface ChunkTranslator {
  translate(events: AsyncIterable<SseEvent>): AsyncGenerator<JsonObject>;
  usage(): TokenUsage | null;
}

/** Creates the translator for one stream. */
export function createChunkTranslator(provider: string, model: string, includeUsage: boolean): ChunkTranslator {
  const translation = new ChunkTranslation(provider, model, includeUsage);
  return { translate: (events) => translation.translate(events), usage: () => translation.usage() };
}

/**
 * One stream's translation state. A class, so its generators are prototype methods created once: a
 * generator function created per stream keeps the request alive through young-generation GCs (see
 * UpstreamEventStream in ../http/provider-stream.ts).
 */
class ChunkTranslation {
  private id = `chatcmpl-${Date.now()}`;
  private upstreamModel: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly tally = new StreamUsage();
  /** Anthropic content block index -> OpenAI tool_calls index. */
  private readonly toolIndexes = new Map<number, number>();

  constructor(
    private readonly provider: string,
    model: string,
    private readonly includeUsage: boolean,
  ) {
    this.upstreamModel = model;
  }

  async *translate(events: AsyncIterable<SseEvent>): AsyncGenerator<JsonObject> {
    let stopped = false;
    for await (const event of events) {
      if (stopped) continue;
      const payload = streamEventObject(this.provider, event.data);
      yield* this.onEvent(payload);
      if (payload["type"] === "message_stop") stopped = true;
    }
    if (!stopped) throw streamCutShort(this.provider, "message_stop");
  }

  usage(): TokenUsage | null {
    return this.tally.usage();
  }

  private chunk(delta: JsonObject, finish: string | null = null): JsonObject {
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.upstreamModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
  }

  private *onEvent(payload: JsonObject): Generator<JsonObject> {
    this.tally.observe(payload);
    switch (payload["type"]) {
      case "message_start": {
        const message = isObject(payload["message"]) ? payload["message"] : {};
        if (typeof message["id"] === "string") this.id = message["id"];
        if (typeof message["model"] === "string") this.upstreamModel = message["model"];
        yield this.chunk({ role: "assistant", content: "", refusal: null });
        return;
      }
      case "content_block_start": {
        const block = isObject(payload["content_block"]) ? payload["content_block"] : {};
        const index = typeof payload["index"] === "number" ? payload["index"] : -1;
        if (block["type"] === "tool_use") {
          const toolIndex = this.toolIndexes.size;
          this.toolIndexes.set(index, toolIndex);
          yield this.chunk({ tool_calls: [{ index: toolIndex, id: block["id"], type: "function", function: { name: block["name"], arguments: "" } }] });
        } else if (block["type"] === "text" && typeof block["text"] === "string" && block["text"] !== "") {
          yield this.chunk({ content: block["text"] });
        }
        return;
      }
      case "content_block_delta": {
        const delta = isObject(payload["delta"]) ? payload["delta"] : {};
        const index = typeof payload["index"] === "number" ? payload["index"] : -1;
        if (delta["type"] === "text_delta" && typeof delta["text"] === "string") {
          yield this.chunk({ content: delta["text"] });
        } else if (delta["type"] === "input_json_delta" && typeof delta["partial_json"] === "string") {
          const toolIndex = this.toolIndexes.get(index);
          if (toolIndex !== undefined) yield this.chunk({ tool_calls: [{ index: toolIndex, function: { arguments: delta["partial_json"] } }] });
        }
        return;
      }
      case "message_delta": {
        const delta = isObject(payload["delta"]) ? payload["delta"] : {};
        yield this.chunk({}, finishReason(delta["stop_reason"]) ?? "stop");
        return;
      }
      case "message_stop":
        if (this.includeUsage) yield { ...this.chunk({}), choices: [], usage: openAiUsage(this.tally.usage() ?? { input_tokens: 0, output_tokens: 0 }) };
        return;
      case "error":
        throw midStreamError(this.provider, payload);
      default:
        // ping, content_block_stop, and event types added later carry nothing an OpenAI chunk shows.
        return;
    }
  }
}
