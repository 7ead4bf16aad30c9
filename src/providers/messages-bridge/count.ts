/**
 * The input-token estimate of a Messages request for providers with no counting endpoint: one token per
 * four characters of everything the model reads (system prompt, text, tool inputs and results, thinking,
 * and the JSON of the tool definitions), rounded up, plus 1,600 tokens per image (Anthropic's cost of a
 * full-size image, an upper bound) and 3 tokens per message for its framing.
 */
import type { CountTokensRequest, JsonObject } from "../types.js";

/** Characters per token of the estimate. */
const CHARS_PER_TOKEN = 4;
/** Tokens an image counts for. */
const IMAGE_TOKENS = 1600;
/** Tokens each message adds for its role and framing. */
const MESSAGE_TOKENS = 3;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Characters and images of some content (a string or blocks, nested tool-result content included). */
function measure(content: unknown, into: { chars: number; images: number }): void {
  if (typeof content === "string") {
    into.chars += content.length;
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block["type"] === "image") into.images++;
    else if (block["type"] === "tool_use") into.chars += String(block["name"] ?? "").length + JSON.stringify(block["input"] ?? {}).length;
    else if (block["type"] === "tool_result") measure(block["content"], into);
    else for (const field of ["text", "thinking"]) if (typeof block[field] === "string") into.chars += (block[field] as string).length;
  }
}

/** The estimated `{input_tokens}` of a request. */
export function estimateInputTokens(req: CountTokensRequest): JsonObject {
  const into = { chars: 0, images: 0 };
  measure(req["system"], into);
  for (const message of req.messages) if (isObject(message)) measure(message["content"], into);
  if (Array.isArray(req["tools"])) into.chars += JSON.stringify(req["tools"]).length;
  return { input_tokens: Math.ceil(into.chars / CHARS_PER_TOKEN) + into.images * IMAGE_TOKENS + req.messages.length * MESSAGE_TOKENS };
}
