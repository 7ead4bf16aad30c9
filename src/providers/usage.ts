/** Reads token usage out of OpenAI-shaped usage objects. */
import type { JsonObject, TokenUsage } from "./types.js";

/**
 * The largest token count one answer can report. Far above any model's context, it keeps a nonsense report
 * (1e308, say) from making a limit's counter Infinity or NaN, which would switch the limit off, or from
 * overflowing the usage history's 64-bit columns.
 */
export const MAX_TOKEN_COUNT = 1_000_000_000;

/** A token count from the wire: a number from 0 to MAX_TOKEN_COUNT, else 0 (not a count). */
export function count(value: unknown): number {
  return typeof value === "number" && value >= 0 && value <= MAX_TOKEN_COUNT ? value : 0;
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
