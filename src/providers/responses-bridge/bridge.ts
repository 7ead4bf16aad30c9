/**
 * Serves the Responses API through an adapter's chat methods, for providers with no Responses endpoint
 * of their own. Streaming turns chat chunks into the Responses event sequence (created, output items
 * and their deltas, completed).
 */
import type { CallOptions, JsonObject, ProviderAdapter, ProviderResult, ProviderStream, ResponsesRequest, TokenUsage } from "../types.js";
import { toChatRequest } from "./request.js";
import { functionCallItem, messageItem, responseObject, toResponse } from "./response.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A non-streaming Responses call over `adapter.chat`. */
export async function bridgeResponses(adapter: ProviderAdapter, req: ResponsesRequest, options: CallOptions): Promise<ProviderResult> {
  const result = await adapter.chat(toChatRequest(req), options);
  return { status: result.status, body: toResponse(result.body, result.usage, req.model, adapter.name, result.status), usage: result.usage };
}

interface OpenItem {
  outputIndex: number;
  item: JsonObject;
  kind: "message" | "function_call";
  text: string;
}

/** A streaming Responses call over `adapter.chatStream`. */
export async function bridgeResponsesStream(adapter: ProviderAdapter, req: ResponsesRequest, options: CallOptions): Promise<ProviderStream> {
  // The bridge reads every chunk's fields, so none may come unparsed.
  const { textOnlyChunks: _unread, ...chatOptions } = options;
  const chat = await adapter.chatStream({ ...toChatRequest(req), stream: true, stream_options: { include_usage: true } }, chatOptions);
  return new BridgedResponsesStream(chat, req.model);
}

/**
 * The Responses event sequence of one chat stream. A class, so its generator is a prototype method
 * created once: a generator function created per request keeps the request alive through
 * young-generation GCs (see UpstreamEventStream in ../http/provider-stream.ts).
 */
class BridgedResponsesStream implements ProviderStream {
  readonly status: number;
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private responseId = `resp_${Date.now()}`;
  private usageSeen: TokenUsage | null = null;

  constructor(
    private readonly chat: ProviderStream,
    private model: string,
  ) {
    this.status = chat.status;
  }

  usage(): TokenUsage | null {
    return this.usageSeen;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<JsonObject> {
    let sequence = 0;
    const event = (type: string, fields: JsonObject): JsonObject => ({ type, sequence_number: sequence++, ...fields });
    const items: OpenItem[] = [];
    let message: OpenItem | null = null;
    const calls = new Map<number, OpenItem>();
    let finish: unknown = null;
    let started = false;

    for await (const chunk of this.chat) {
      if (!started) {
        if (typeof chunk["id"] === "string") this.responseId = `resp_${chunk["id"]}`;
        if (typeof chunk["model"] === "string") this.model = chunk["model"];
        started = true;
        yield event("response.created", { response: responseObject(this.responseId, this.model, this.createdAt, "in_progress", [], null, null) });
      }
      const choices = Array.isArray(chunk["choices"]) ? chunk["choices"] : [];
      const choice = isObject(choices[0]) ? choices[0] : null;
      if (!choice) continue;
      if (choice["finish_reason"]) finish = choice["finish_reason"];
      const delta = isObject(choice["delta"]) ? choice["delta"] : {};
      if (typeof delta["content"] === "string" && delta["content"] !== "") {
        if (!message) {
          message = { outputIndex: items.length, item: messageItem(`msg_${this.responseId}`, "", "in_progress"), kind: "message", text: "" };
          message.item["content"] = [];
          items.push(message);
          yield event("response.output_item.added", { output_index: message.outputIndex, item: message.item });
          yield event("response.content_part.added", { item_id: message.item["id"], output_index: message.outputIndex, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
        }
        message.text += delta["content"];
        yield event("response.output_text.delta", { item_id: message.item["id"], output_index: message.outputIndex, content_index: 0, delta: delta["content"] });
      }
      const toolCalls = Array.isArray(delta["tool_calls"]) ? delta["tool_calls"] : [];
      for (const call of toolCalls) {
        if (!isObject(call)) continue;
        const index = typeof call["index"] === "number" ? call["index"] : 0;
        const fn = isObject(call["function"]) ? call["function"] : {};
        let open = calls.get(index);
        if (!open) {
          const callId = String(call["id"] ?? `call_${index}`);
          open = { outputIndex: items.length, item: functionCallItem(`fc_${callId}`, callId, String(fn["name"] ?? ""), "", "in_progress"), kind: "function_call", text: "" };
          calls.set(index, open);
          items.push(open);
          yield event("response.output_item.added", { output_index: open.outputIndex, item: open.item });
        }
        if (typeof fn["arguments"] === "string" && fn["arguments"] !== "") {
          open.text += fn["arguments"];
          yield event("response.function_call_arguments.delta", { item_id: open.item["id"], output_index: open.outputIndex, delta: fn["arguments"] });
        }
      }
    }
    this.usageSeen = this.chat.usage();

    const output: JsonObject[] = [];
    for (const open of items) {
      const id = open.item["id"];
      if (open.kind === "message") {
        const done = messageItem(String(id), open.text, "completed");
        yield event("response.output_text.done", { item_id: id, output_index: open.outputIndex, content_index: 0, text: open.text });
        yield event("response.content_part.done", { item_id: id, output_index: open.outputIndex, content_index: 0, part: { type: "output_text", text: open.text, annotations: [] } });
        yield event("response.output_item.done", { output_index: open.outputIndex, item: done });
        output.push(done);
      } else {
        const done = { ...open.item, arguments: open.text, status: "completed" };
        yield event("response.function_call_arguments.done", { item_id: id, output_index: open.outputIndex, arguments: open.text });
        yield event("response.output_item.done", { output_index: open.outputIndex, item: done });
        output.push(done);
      }
    }
    const final = responseObject(this.responseId, this.model, this.createdAt, "completed", output, this.usageSeen, finish);
    yield event(final["status"] === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
  }
}
