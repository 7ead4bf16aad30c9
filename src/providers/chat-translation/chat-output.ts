/** OpenAI chat.completion and chat.completion.chunk objects built from a translated answer. */
import { randomUUID } from "node:crypto";
import type { SseEvent } from "../http/sse.js";
import { streamCutShort } from "../http/upstream-http.js";
import type { JsonObject, TokenUsage } from "../types.js";

/** One tool call of an answer, its arguments as JSON text. */
export interface AnswerToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A complete answer in neutral form. */
export interface ChatAnswer {
  id: string;
  model: string;
  /** null when the answer has no text (only tool calls). */
  text: string | null;
  toolCalls: AnswerToolCall[];
  finishReason: string | null;
  usage: TokenUsage;
}

/** A fresh completion id, for upstreams that send none. */
export function completionId(): string {
  return `chatcmpl-${randomUUID()}`;
}

/** A fresh tool-call id, for upstreams whose calls carry none. */
export function toolCallId(): string {
  return `call_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
}

/** OpenAI's usage object. */
export function usageObject(usage: TokenUsage): JsonObject {
  return { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens };
}

/** The chat.completion of an answer. */
export function chatCompletion(answer: ChatAnswer): JsonObject {
  const message: JsonObject = { role: "assistant", content: answer.text, refusal: null };
  if (answer.toolCalls.length > 0) {
    message["tool_calls"] = answer.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }));
  }
  return {
    id: answer.id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: answer.finishReason }],
    usage: usageObject(answer.usage),
  };
}

/** Builds the chunks of one stream (same id, model and created time throughout). */
export class ChunkBuilder {
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    readonly id: string,
    readonly model: string,
  ) {}

  /** A chunk with one choice. */
  chunk(delta: JsonObject, finish: string | null = null): JsonObject {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
  }

  /** The usage-only chunk stream_options.include_usage asks for. */
  usageChunk(usage: TokenUsage): JsonObject {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model, choices: [], usage: usageObject(usage) };
  }
}

/** True when the caller asked for the usage chunk (stream_options.include_usage). */
export function wantsUsage(req: JsonObject): boolean {
  const options = req["stream_options"];
  return typeof options === "object" && options !== null && (options as JsonObject)["include_usage"] === true;
}

/**
 * One translated stream: each upstream event becomes zero or more chunks, and the usage chunk follows the
 * last one when the caller asked for it. A class, so its generators live on the prototype (see
 * UpstreamEventStream in ../http/provider-stream.ts).
 */
export abstract class ChatStreamTranslation {
  protected readonly chunks: ChunkBuilder;
  protected usageSeen: TokenUsage | null = null;
  /** Set by the subclass once the upstream's event that ends an answer arrived. */
  protected complete = false;

  constructor(
    protected readonly provider: string,
    model: string,
    private readonly includeUsage: boolean,
  ) {
    this.chunks = new ChunkBuilder(completionId(), model);
  }

  /** The usage the stream reported so far; null when it reported none. */
  usage(): TokenUsage | null {
    return this.usageSeen;
  }

  async *translate(events: AsyncIterable<SseEvent>): AsyncGenerator<JsonObject> {
    for await (const event of events) yield* this.onEvent(event);
    if (!this.complete) throw streamCutShort(this.provider, this.endMarker);
    if (this.includeUsage && this.usageSeen) yield this.chunks.usageChunk(this.usageSeen);
  }

  /** The chunks of one upstream event; throws a ProviderError for a failure the stream reports. */
  protected abstract onEvent(event: SseEvent): Generator<JsonObject>;

  /** What ends an answer in the upstream's stream, for the error of one cut short. */
  protected abstract readonly endMarker: string;
}
