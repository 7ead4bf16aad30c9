/**
 * Serves the Anthropic Messages API through an adapter's chat methods, for providers without a Messages
 * endpoint of their own. Streaming turns chat chunks into Anthropic's event sequence: message_start, ping,
 * one content block at a time (content_block_start, its text_delta / thinking_delta / input_json_delta
 * events, content_block_stop), message_delta with the stop reason and usage, message_stop.
 */
import { stopReason } from "../anthropic/response-translation.js";
import type { CallOptions, JsonObject, MessagesRequest, ProviderAdapter, ProviderResult, ProviderStream, TokenUsage } from "../types.js";
import { toChatRequest } from "./request.js";
import { messageId, messagesUsage, reasoningOf, toMessage } from "./response.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The call options for the chat call: the client's bytes are Anthropic JSON, never a chat body, and the
 * bridge reads every chunk's fields, so none may come unparsed.
 */
function chatOptions(options: CallOptions): CallOptions {
  const { rawBody: _anthropicBytes, textOnlyChunks: _unread, ...rest } = options;
  return rest;
}

/** A non-streaming Messages call over `adapter.chat`. */
export async function bridgeMessages(adapter: ProviderAdapter, req: MessagesRequest, options: CallOptions): Promise<ProviderResult> {
  const result = await adapter.chat(toChatRequest(req, adapter.name), chatOptions(options));
  return { status: result.status, body: toMessage(result.body, result.usage, req.model, adapter.name, result.status), usage: result.usage };
}

/** A streaming Messages call over `adapter.chatStream`. */
export async function bridgeMessagesStream(adapter: ProviderAdapter, req: MessagesRequest, options: CallOptions): Promise<ProviderStream> {
  const chat = await adapter.chatStream({ ...toChatRequest(req, adapter.name), stream: true, stream_options: { include_usage: true } }, chatOptions(options));
  return new BridgedMessagesStream(chat, req.model);
}

/** The content block being streamed: its index and what it holds (tool blocks by their chat tool index). */
interface OpenBlock {
  index: number;
  kind: "text" | "thinking" | "tool";
  toolIndex: number;
}

/**
 * The Anthropic event sequence of one chat stream. A class, so its generator is a prototype method created
 * once (see UpstreamEventStream in ../http/provider-stream.ts).
 */
class BridgedMessagesStream implements ProviderStream {
  readonly status: number;
  private usageSeen: TokenUsage | null = null;
  private open: OpenBlock | null = null;
  private blocks = 0;

  constructor(
    private readonly chat: ProviderStream,
    private readonly model: string,
  ) {
    this.status = chat.status;
  }

  usage(): TokenUsage | null {
    return this.usageSeen;
  }

  /** message_start (the input count is not known before the end of a chat stream) and a ping, as Anthropic sends. */
  private *start(chunk: JsonObject): Generator<JsonObject> {
    const model = typeof chunk["model"] === "string" ? chunk["model"] : this.model;
    const message = { id: messageId(chunk["id"]), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    yield { type: "message_start", message };
    yield { type: "ping" };
  }

  /** Closes the open block, if any, and opens `kind` with `block` as its start. */
  private *switchTo(kind: OpenBlock["kind"], toolIndex: number, block: JsonObject): Generator<JsonObject> {
    yield* this.close();
    this.open = { index: this.blocks++, kind, toolIndex };
    yield { type: "content_block_start", index: this.open.index, content_block: block };
  }

  private *close(): Generator<JsonObject> {
    if (this.open === null) return;
    yield { type: "content_block_stop", index: this.open.index };
    this.open = null;
  }

  private *delta(kind: OpenBlock["kind"], delta: JsonObject, toolIndex = -1): Generator<JsonObject> {
    if (this.open?.kind !== kind || this.open.toolIndex !== toolIndex) {
      const start = kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" };
      yield* this.switchTo(kind, toolIndex, start);
    }
    yield { type: "content_block_delta", index: (this.open as OpenBlock).index, delta };
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    let started = false;
    let finish: unknown = null;
    for await (const chunk of this.chat) {
      if (!started) {
        started = true;
        yield* this.start(chunk);
      }
      const choices = Array.isArray(chunk["choices"]) ? chunk["choices"] : [];
      const choice = isObject(choices[0]) ? choices[0] : null;
      if (choice === null) continue;
      if (choice["finish_reason"]) finish = choice["finish_reason"];
      const delta = isObject(choice["delta"]) ? choice["delta"] : {};
      const reasoning = reasoningOf(delta);
      if (reasoning !== null) yield* this.delta("thinking", { type: "thinking_delta", thinking: reasoning });
      if (typeof delta["content"] === "string" && delta["content"] !== "") yield* this.delta("text", { type: "text_delta", text: delta["content"] });
      const toolCalls = Array.isArray(delta["tool_calls"]) ? delta["tool_calls"] : [];
      for (const call of toolCalls) {
        if (!isObject(call)) continue;
        const toolIndex = typeof call["index"] === "number" ? call["index"] : 0;
        const fn = isObject(call["function"]) ? call["function"] : {};
        if (this.open?.kind !== "tool" || this.open.toolIndex !== toolIndex) {
          yield* this.switchTo("tool", toolIndex, { type: "tool_use", id: String(call["id"] ?? `toolu_${toolIndex}`), name: String(fn["name"] ?? ""), input: {} });
        }
        if (typeof fn["arguments"] === "string" && fn["arguments"] !== "") {
          yield { type: "content_block_delta", index: (this.open as OpenBlock | null)?.index ?? 0, delta: { type: "input_json_delta", partial_json: fn["arguments"] } };
        }
      }
    }
    this.usageSeen = this.chat.usage();
    if (!started) yield* this.start({});
    yield* this.close();
    const usage = messagesUsage(this.usageSeen ?? { input_tokens: 0, output_tokens: 0 });
    yield { type: "message_delta", delta: { stop_reason: stopReason(finish) ?? "end_turn", stop_sequence: null }, usage };
    yield { type: "message_stop" };
  }
}
