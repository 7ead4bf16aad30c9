/** Anthropic Messages response -> OpenAI chat.completion. */
import type { JsonObject, TokenUsage } from "../types.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** Anthropic stop_reason -> OpenAI finish_reason. */
export function finishReason(stopReason: unknown): string | null {
  switch (stopReason) {
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return "stop";
    case "max_tokens":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return stopReason === null || stopReason === undefined ? null : "stop";
  }
}

/** Input tokens including cache reads and writes, which Anthropic counts apart and OpenAI does not. */
export function inputTokens(usage: JsonObject): number {
  return count(usage["input_tokens"]) + count(usage["cache_creation_input_tokens"]) + count(usage["cache_read_input_tokens"]);
}

/** The gateway's usage from an Anthropic usage object. */
export function anthropicUsage(usage: unknown): TokenUsage {
  return isObject(usage) ? { input_tokens: inputTokens(usage), output_tokens: count(usage["output_tokens"]) } : { input_tokens: 0, output_tokens: 0 };
}

/** OpenAI's usage object for a TokenUsage. */
export function openAiUsage(usage: TokenUsage): JsonObject {
  return { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens };
}

/** The chat.completion for an Anthropic message; `model` is echoed when the upstream omits it. */
export function toChatCompletion(message: JsonObject, model: string): JsonObject {
  const blocks = Array.isArray(message["content"]) ? message["content"] : [];
  let text = "";
  let hasText = false;
  const toolCalls: JsonObject[] = [];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (block["type"] === "text" && typeof block["text"] === "string") {
      text += block["text"];
      hasText = true;
    } else if (block["type"] === "tool_use") {
      toolCalls.push({ id: block["id"], type: "function", function: { name: block["name"], arguments: JSON.stringify(block["input"] ?? {}) } });
    }
  }
  const assistant: JsonObject = { role: "assistant", content: hasText ? text : null, refusal: null };
  if (toolCalls.length > 0) assistant["tool_calls"] = toolCalls;
  return {
    id: typeof message["id"] === "string" ? message["id"] : `chatcmpl-${Date.now()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: typeof message["model"] === "string" ? message["model"] : model,
    choices: [{ index: 0, message: assistant, logprobs: null, finish_reason: finishReason(message["stop_reason"]) }],
    usage: openAiUsage(anthropicUsage(message["usage"])),
  };
}
