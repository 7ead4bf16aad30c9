/** Reads token usage out of OpenAI-shaped usage objects. */
import type { JsonObject, TokenUsage } from "./types.js";

/** A token count from the wire: a finite number >= 0, else 0. */
export function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

function asObject(value: unknown): JsonObject | null {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as JsonObject) : null;
}

/** Chat completions usage ({prompt_tokens, completion_tokens}); null when absent. */
export function chatUsage(usage: unknown): TokenUsage | null {
  const u = asObject(usage);
  return u ? { input_tokens: count(u["prompt_tokens"]), output_tokens: count(u["completion_tokens"]) } : null;
}

/** Responses API usage ({input_tokens, output_tokens}); null when absent. */
export function responsesUsage(usage: unknown): TokenUsage | null {
  const u = asObject(usage);
  return u ? { input_tokens: count(u["input_tokens"]), output_tokens: count(u["output_tokens"]) } : null;
}

/** Zero tokens: what a call that reported no usage is charged. */
export function noUsage(): TokenUsage {
  return { input_tokens: 0, output_tokens: 0 };
}
