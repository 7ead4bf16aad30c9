/** OpenAI chat.completion -> Anthropic Messages `message`. */
import { stopReason } from "../anthropic/response-translation.js";
import { firstChoice, toolCallName } from "../chat-translation/completion-reading.js";
import type { JsonObject, TokenUsage } from "../types.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The reasoning text OpenAI-compatible upstreams put beside the content (`reasoning_content` or `reasoning`). */
export function reasoningOf(message: JsonObject): string | null {
  const reasoning = message["reasoning_content"] ?? message["reasoning"];
  return typeof reasoning === "string" && reasoning !== "" ? reasoning : null;
}

/** A tool call's JSON-encoded arguments as a tool_use input (an object; anything else becomes {}). */
export function toolInput(args: unknown): JsonObject {
  if (typeof args !== "string" || args.trim() === "") return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** A message id in Anthropic's form, from the upstream's id. */
export function messageId(upstreamId: unknown): string {
  return typeof upstreamId === "string" && upstreamId.startsWith("msg_") ? upstreamId : `msg_${typeof upstreamId === "string" ? upstreamId : Date.now()}`;
}

/** The Anthropic usage object of a TokenUsage. */
export function messagesUsage(usage: TokenUsage): JsonObject {
  return { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens };
}

/** Converts a chat.completion (as `provider`'s adapter returned it with `status`) to an Anthropic message. */
export function toMessage(completion: JsonObject, usage: TokenUsage, fallbackModel: string, provider: string, status: number): JsonObject {
  const { choice, message } = firstChoice(completion, provider, status);
  const content: JsonObject[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== null) content.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (typeof message["content"] === "string" && message["content"] !== "") content.push({ type: "text", text: message["content"] });
  const toolCalls = Array.isArray(message["tool_calls"]) ? message["tool_calls"] : [];
  toolCalls.forEach((call, i) => {
    if (!isObject(call) || !isObject(call["function"])) return;
    content.push({ type: "tool_use", id: String(call["id"] ?? `toolu_${i}`), name: toolCallName(call["function"], provider, status), input: toolInput(call["function"]["arguments"]) });
  });
  return {
    id: messageId(completion["id"]),
    type: "message",
    role: "assistant",
    model: typeof completion["model"] === "string" ? completion["model"] : fallbackModel,
    content,
    stop_reason: stopReason(choice["finish_reason"]) ?? "end_turn",
    stop_sequence: null,
    usage: messagesUsage(usage),
  };
}
