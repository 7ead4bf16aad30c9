/** chat.completion -> OpenAI Responses `response` object. */
import { firstChoice, toolCallName } from "../chat-translation/completion-reading.js";
import type { JsonObject, TokenUsage } from "../types.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The Responses usage object. */
export function responsesUsageObject(usage: TokenUsage): JsonObject {
  return { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens };
}

/** A message output item holding `text`. */
export function messageItem(id: string, text: string, status: string): JsonObject {
  return { type: "message", id, status, role: "assistant", content: [{ type: "output_text", text, annotations: [] }] };
}

/** A function_call output item. */
export function functionCallItem(id: string, callId: string, name: string, args: string, status: string): JsonObject {
  return { type: "function_call", id, call_id: callId, name, arguments: args, status };
}

/** The response envelope around `output`. */
export function responseObject(id: string, model: string, createdAt: number, status: string, output: JsonObject[], usage: TokenUsage | null, finish: unknown): JsonObject {
  const incomplete = finish === "length";
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: incomplete && status === "completed" ? "incomplete" : status,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    error: null,
    model,
    output,
    usage: usage ? responsesUsageObject(usage) : null,
  };
}

/** Converts a chat.completion (as `provider`'s adapter returned it with `status`) to a response object. */
export function toResponse(completion: JsonObject, usage: TokenUsage, fallbackModel: string, provider: string, status: number): JsonObject {
  const { choice, message } = firstChoice(completion, provider, status);
  const baseId = typeof completion["id"] === "string" ? completion["id"] : String(Date.now());
  const output: JsonObject[] = [];
  if (typeof message["content"] === "string" && message["content"] !== "") output.push(messageItem(`msg_${baseId}`, message["content"], "completed"));
  const toolCalls = Array.isArray(message["tool_calls"]) ? message["tool_calls"] : [];
  toolCalls.forEach((call, i) => {
    if (!isObject(call) || !isObject(call["function"])) return;
    const callId = String(call["id"] ?? `call_${i}`);
    output.push(functionCallItem(`fc_${callId}`, callId, toolCallName(call["function"], provider, status), String(call["function"]["arguments"] ?? ""), "completed"));
  });
  const model = typeof completion["model"] === "string" ? completion["model"] : fallbackModel;
  const created = typeof completion["created"] === "number" ? completion["created"] : Math.floor(Date.now() / 1000);
  return responseObject(`resp_${baseId}`, model, created, "completed", output, usage, choice["finish_reason"]);
}
