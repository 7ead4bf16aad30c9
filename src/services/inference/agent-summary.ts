/**
 * What the agent loop hands back besides the model's own answer: the JSON summary of the tools it ran in
 * a mixed turn (the shape README.md documents under "Agent mode"), and usage summed over the loop.
 */
import type { JsonObject } from "../../providers/types.js";

/** One tool call the gateway executed, with its result as the model saw it. */
export interface ExecutedCall {
  /** The model's tool_call_id (chat) or call_id (Responses). */
  id: string;
  /** `<client>-<tool>`. */
  name: string;
  /** The tool result text. */
  content: string;
  isError: boolean;
}

/**
 * The mixed-turn summary: `{"<tool_call_id>": {"tool": "<client>-<tool>", "content": "<result text>",
 * "is_error": false}}`, keys in call order.
 */
export function executedSummary(executed: readonly ExecutedCall[]): string {
  const summary: Record<string, { tool: string; content: string; is_error: boolean }> = {};
  for (const call of executed) summary[call.id] = { tool: call.name, content: call.content, is_error: call.isError };
  return JSON.stringify(summary);
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Adds two usage objects field by field: numbers are summed, nested objects (prompt_tokens_details,
 * input_tokens_details, ...) are summed the same way, anything else keeps the latest value. Works for the
 * chat (prompt/completion/total_tokens) and Responses (input/output/total_tokens) shapes alike.
 */
export function addUsage(sum: JsonObject | null, next: unknown): JsonObject | null {
  if (!isObject(next)) return sum;
  if (sum === null) return structuredClone(next);
  const out: JsonObject = { ...sum };
  for (const [field, value] of Object.entries(next)) {
    const prior = out[field];
    if (typeof value === "number" && typeof prior === "number") out[field] = prior + value;
    else if (isObject(value)) out[field] = addUsage(isObject(prior) ? prior : null, value);
    else if (value !== null || prior === undefined) out[field] = value;
  }
  return out;
}
