/**
 * What identifies a request to the response cache: the direct key (a hash of the namespace, API,
 * provider, model and the normalised body) and, for semantic lookups, the last user message with a hash
 * of everything else, which a semantic hit must match exactly.
 */
import { createHash } from "node:crypto";
import type { JsonObject } from "../providers/types.js";

/** Body fields that never change the answer: who asks, how usage is reported on a stream, gateway fallbacks. */
const IGNORED_FIELDS = new Set(["user", "stream_options", "fallbacks"]);

/** JSON text with object keys sorted at every depth, so key order never splits the cache. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function hash(parts: readonly string[]): string {
  const h = createHash("sha256");
  for (const part of parts) h.update(part).update("\u0000");
  return h.digest("hex");
}

/** What a cache key is made of. */
export interface CacheKeyInput {
  namespace: string;
  /** The inference API: chat, responses or messages. */
  method: string;
  provider: string;
  model: string;
  body: JsonObject;
}

/** The body without the fields that do not change the answer; `stream` kept as a boolean. */
function normalised(body: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [field, value] of Object.entries(body)) if (!IGNORED_FIELDS.has(field) && field !== "model" && field !== "stream") out[field] = value;
  out["stream"] = body["stream"] === true;
  return out;
}

/** The direct cache key of a request. */
export function directCacheKey(input: CacheKeyInput): string {
  return hash([input.namespace, input.method, input.provider, input.model, canonical(normalised(input.body))]);
}

/** The text of a message's content: a string, or the text parts of a list. */
function contentText(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  const texts = content.flatMap((part) => {
    if (part === null || typeof part !== "object") return [];
    const text = (part as JsonObject)["text"];
    return typeof text === "string" ? [text] : [];
  });
  return texts.length === 0 ? null : texts.join("\n");
}

/** Where the last user message sits: the list holding it and its index; null when there is none. */
function lastUserMessage(body: JsonObject): { list: readonly unknown[]; index: number; text: string } | null {
  const list = Array.isArray(body["messages"]) ? body["messages"] : Array.isArray(body["input"]) ? body["input"] : null;
  if (list === null) return null;
  for (let index = list.length - 1; index >= 0; index--) {
    const item = list[index];
    if (item === null || typeof item !== "object" || (item as JsonObject)["role"] !== "user") continue;
    const text = contentText((item as JsonObject)["content"]);
    return text === null ? null : { list, index, text };
  }
  return null;
}

/** The question a semantic lookup embeds, and the hash of the rest of the request; null when it has no user text. */
export function semanticParts(input: CacheKeyInput): { question: string; paramsHash: string } | null {
  const body = input.body;
  // The Responses API's plain-string input is itself the question.
  if (typeof body["input"] === "string") {
    return { question: body["input"], paramsHash: hash([input.namespace, input.method, input.provider, input.model, canonical(normalised({ ...body, input: null }))]) };
  }
  const last = lastUserMessage(body);
  if (last === null) return null;
  const field = Array.isArray(body["messages"]) ? "messages" : "input";
  const others = last.list.map((item, index) => (index === last.index ? { role: "user", content: null } : item));
  return { question: last.text, paramsHash: hash([input.namespace, input.method, input.provider, input.model, canonical(normalised({ ...body, [field]: others }))]) };
}
