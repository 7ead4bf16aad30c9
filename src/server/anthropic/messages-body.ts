/**
 * Checks of an Anthropic Messages request body before anything goes upstream: the fields the Messages
 * API requires (model, an integer max_tokens, messages with user/assistant roles), the content block
 * types each role may send, and tool_result blocks that answer a tool_use of the latest assistant
 * message before them. Fields the gateway does not read pass through unchanged.
 */
import type { JsonObject } from "../../providers/types.js";
import { badRequest, checkStreamAndFallbacks } from "../v1/chat-completions.js";

/** Content block types each role may send. */
const BLOCK_TYPES: Readonly<Record<"user" | "assistant", ReadonlySet<string>>> = {
  user: new Set(["text", "image", "document", "tool_result", "search_result"]),
  assistant: new Set(["text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result"]),
};

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `model` every /anthropic body requires: bare or `<provider>/<model>`. */
function requireModel(body: JsonObject): string {
  const model = body["model"];
  if (typeof model !== "string" || model.trim() === "") {
    throw badRequest(`model: required, a string such as "claude-sonnet-4-5" or "anthropic/claude-sonnet-4-5"`, "model");
  }
  return model;
}

/** Checks one block of a message; `toolUses` are the tool_use ids of the latest assistant message. */
function checkBlock(block: unknown, role: "user" | "assistant", field: string, toolUses: ReadonlySet<string>, ids: Set<string>): void {
  if (!isObject(block) || typeof block["type"] !== "string") throw badRequest(`${field}: a content block must be an object with a string type`, field);
  const type = block["type"];
  if (!BLOCK_TYPES[role].has(type)) {
    throw badRequest(`${field}.type: ${JSON.stringify(type)} is not a content block a ${role} message can send (${[...BLOCK_TYPES[role]].join(", ")})`, `${field}.type`);
  }
  if (type === "text" && typeof block["text"] !== "string") throw badRequest(`${field}.text: a text block needs a string text`, `${field}.text`);
  if (type === "image" && !isObject(block["source"])) throw badRequest(`${field}.source: an image block needs a source {type: "base64" | "url", ...}`, `${field}.source`);
  if (type === "tool_use") {
    if (typeof block["id"] !== "string" || typeof block["name"] !== "string" || !isObject(block["input"])) {
      throw badRequest(`${field}: a tool_use block needs a string id, a string name and an object input`, field);
    }
    ids.add(block["id"]);
  }
  if (type === "tool_result") {
    const id = block["tool_use_id"];
    if (typeof id !== "string") throw badRequest(`${field}.tool_use_id: a tool_result block needs the tool_use_id it answers`, `${field}.tool_use_id`);
    if (!toolUses.has(id)) {
      throw badRequest(`${field}.tool_use_id: ${JSON.stringify(id)} answers no tool_use block of the latest assistant message before it`, `${field}.tool_use_id`);
    }
  }
}

/** Checks `messages` (and `system`), as both messages and count_tokens bodies carry them. */
export function checkConversation(body: JsonObject): unknown[] {
  const messages = body["messages"];
  if (!Array.isArray(messages) || messages.length === 0) {
    throw badRequest("messages: required, a non-empty list of {role: \"user\" | \"assistant\", content} objects", "messages");
  }
  let previousToolUses: ReadonlySet<string> = new Set();
  messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isObject(message)) throw badRequest(`${at}: a message must be an object {role, content}`, at);
    const role = message["role"];
    if (role !== "user" && role !== "assistant") {
      throw badRequest(`${at}.role: ${JSON.stringify(role)} is not a role of the Messages API (user or assistant; the system prompt goes in the top-level system field)`, `${at}.role`);
    }
    const content = message["content"];
    const ids = new Set<string>();
    if (Array.isArray(content)) content.forEach((block, j) => checkBlock(block, role, `${at}.content[${j}]`, previousToolUses, ids));
    else if (typeof content !== "string") throw badRequest(`${at}.content: must be a string or a list of content blocks`, `${at}.content`);
    // Consecutive user messages are one turn to the API, so a result may follow other user content.
    if (role === "assistant") previousToolUses = ids;
  });
  const system = body["system"];
  if (system !== undefined && typeof system !== "string") {
    if (!Array.isArray(system) || !system.every((block) => isObject(block) && block["type"] === "text" && typeof block["text"] === "string")) {
      throw badRequest("system: must be a string or a list of text blocks {type: \"text\", text}", "system");
    }
  }
  const tools = body["tools"];
  if (tools !== undefined && !(Array.isArray(tools) && tools.every((tool) => isObject(tool) && typeof tool["name"] === "string"))) {
    throw badRequest("tools: must be a list of tools, each with a string name", "tools");
  }
  return messages;
}

/** A checked Messages request body. */
type MessagesBody = { model: string; max_tokens: number; messages: unknown[]; stream?: boolean } & JsonObject;

/** Checks a Messages request body: `stream`, when present, is a boolean or null. */
export function validateMessagesBody(body: JsonObject): MessagesBody {
  requireModel(body);
  const maxTokens = body["max_tokens"];
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1) {
    throw badRequest(`max_tokens: required, a whole number of at least 1, got ${JSON.stringify(maxTokens) ?? "nothing"}`, "max_tokens");
  }
  checkConversation(body);
  const stop = body["stop_sequences"];
  if (stop !== undefined && !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))) {
    throw badRequest("stop_sequences: must be a list of strings", "stop_sequences");
  }
  checkStreamAndFallbacks(body);
  // The checks above are all the type claims: the body itself goes on, not a copy of it.
  return body as MessagesBody;
}

/** A checked count_tokens body. */
type CountTokensBody = { model: string; messages: unknown[] } & JsonObject;

/** Checks a count_tokens body: a Messages request without max_tokens. */
export function validateCountTokensBody(body: JsonObject): CountTokensBody {
  requireModel(body);
  checkConversation(body);
  return body as CountTokensBody;
}
