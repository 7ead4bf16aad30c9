/** Anthropic Messages response -> OpenAI chat.completion. */
import type { JsonObject, TokenUsage } from "../types.js";
import { malformedAnswer } from "../provider-error.js";
import { count } from "../usage.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Anthropic stop_reason -> OpenAI finish_reason; the first entry for a finish reason is its way back. */
const FINISH_REASONS: ReadonlyArray<readonly [string, string]> = [
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["pause_turn", "stop"],
  ["max_tokens", "length"],
  ["tool_use", "tool_calls"],
  ["refusal", "content_filter"],
];

/** Anthropic stop_reason -> OpenAI finish_reason. */
export function finishReason(stopReason: unknown): string | null {
  if (stopReason === null || stopReason === undefined) return null;
  return FINISH_REASONS.find(([stop]) => stop === stopReason)?.[1] ?? "stop";
}

/** OpenAI finish_reason -> Anthropic stop_reason (`function_call`, the legacy name, is a tool use too). */
export function stopReason(finish: unknown): string | null {
  if (finish === null || finish === undefined) return null;
  if (finish === "function_call") return "tool_use";
  return FINISH_REASONS.find(([, reason]) => reason === finish)?.[0] ?? "end_turn";
}

/** Input tokens including cache reads and writes, which Anthropic counts apart and OpenAI does not. */
export function inputTokens(usage: JsonObject): number {
  return count(usage["input_tokens"]) + count(usage["cache_creation_input_tokens"]) + count(usage["cache_read_input_tokens"]);
}

/** The gateway's usage from an Anthropic usage object. */
export function anthropicUsage(usage: unknown): TokenUsage {
  return isObject(usage) ? { input_tokens: inputTokens(usage), output_tokens: count(usage["output_tokens"]) } : { input_tokens: 0, output_tokens: 0 };
}

/**
 * The usage an Anthropic event stream reports: message_start carries the input count (and a first output
 * count), message_delta the cumulative output count (and, on some API versions, the input count).
 */
export class StreamUsage {
  private input = 0;
  private output = 0;
  private seen = false;

  /** Reads the usage of one event, whatever its type. */
  observe(event: JsonObject): void {
    const usage = event["type"] === "message_start" && isObject(event["message"]) ? event["message"]["usage"] : event["type"] === "message_delta" ? event["usage"] : undefined;
    if (!isObject(usage)) return;
    if (typeof usage["output_tokens"] === "number") this.output = count(usage["output_tokens"]);
    if (typeof usage["input_tokens"] === "number") this.input = inputTokens(usage);
    this.seen = true;
  }

  /** The counts so far; null until an event reported any. */
  usage(): TokenUsage | null {
    return this.seen ? { input_tokens: this.input, output_tokens: this.output } : null;
  }
}

/** OpenAI's usage object for a TokenUsage. */
export function openAiUsage(usage: TokenUsage): JsonObject {
  return { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens };
}

/**
 * The chat.completion for an Anthropic message `provider` answered with `status`; `model` is echoed when the
 * upstream omits it. A message without a content array, or with a tool_use block without an id or a name, is
 * malformed.
 */
export function toChatCompletion(message: JsonObject, model: string, provider: string, status: number): JsonObject {
  const blocks = message["content"];
  if (!Array.isArray(blocks)) throw malformedAnswer(provider, status, "a message without a content array");
  let text = "";
  let hasText = false;
  const toolCalls: JsonObject[] = [];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (block["type"] === "text" && typeof block["text"] === "string") {
      text += block["text"];
      hasText = true;
    } else if (block["type"] === "tool_use") {
      const { id, name } = block;
      if (typeof id !== "string" || id === "" || typeof name !== "string" || name === "") throw malformedAnswer(provider, status, "a tool_use block without an id or a name");
      toolCalls.push({ id, type: "function", function: { name, arguments: JSON.stringify(block["input"] ?? {}) } });
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
