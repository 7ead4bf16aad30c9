/**
 * Anthropic Messages request -> OpenAI chat-completions request, for providers that only speak chat:
 * the system prompt becomes a system message, tool_result blocks become `role: tool` messages (ahead of
 * the rest of their user turn, as OpenAI wants results right after the calls), tool_use blocks become
 * tool_calls, images become image_url parts, max_tokens the output limit. top_k and thinking have no chat
 * equivalent and are left out.
 */
import { callerError, isObject } from "../chat-translation/chat-input.js";
import type { ChatRequest, JsonObject, MessagesRequest } from "../types.js";

/** An Anthropic image block's source as an OpenAI image URL (base64 data become a data URL). */
function imageUrl(block: JsonObject, field: string): string {
  const source = block["source"];
  if (isObject(source) && source["type"] === "base64" && typeof source["media_type"] === "string" && typeof source["data"] === "string") {
    return `data:${source["media_type"]};base64,${source["data"]}`;
  }
  if (isObject(source) && source["type"] === "url" && typeof source["url"] === "string" && /^https?:\/\//i.test(source["url"])) return source["url"];
  throw callerError(`${field}.source`, "an image source must be {type: \"base64\", media_type, data} or {type: \"url\", url} with an http(s) URL");
}

/** Anthropic tools as OpenAI function tools; server tools have no OpenAI equivalent. */
function chatTools(tools: unknown): JsonObject[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw callerError("tools", "tools must be an array");
  return tools.map((tool, i) => {
    if (!isObject(tool) || typeof tool["name"] !== "string") throw callerError(`tools[${i}]`, "each tool must be {name, description?, input_schema}");
    if (tool["type"] !== undefined && tool["type"] !== null && tool["type"] !== "custom") {
      throw callerError(`tools[${i}].type`, `tool type ${JSON.stringify(tool["type"])} is a server tool that only Anthropic runs; route this request to an anthropic provider or leave the tool out`);
    }
    const fn: JsonObject = { name: tool["name"], parameters: isObject(tool["input_schema"]) ? tool["input_schema"] : { type: "object", properties: {} } };
    if (typeof tool["description"] === "string") fn["description"] = tool["description"];
    return { type: "function", function: fn };
  });
}

/** Anthropic tool_choice as OpenAI tool_choice and parallel_tool_calls. */
function chatToolChoice(choice: unknown): { toolChoice?: unknown; parallel?: false } {
  if (choice === undefined || choice === null) return {};
  if (!isObject(choice)) throw callerError("tool_choice", "tool_choice must be an object {type: auto|any|tool|none}");
  const parallel = choice["disable_parallel_tool_use"] === true ? { parallel: false as const } : {};
  switch (choice["type"]) {
    case "auto":
      return { toolChoice: "auto", ...parallel };
    case "any":
      return { toolChoice: "required", ...parallel };
    case "none":
      return { toolChoice: "none" };
    case "tool":
      if (typeof choice["name"] !== "string") throw callerError("tool_choice.name", "a tool choice of type tool names the tool");
      return { toolChoice: { type: "function", function: { name: choice["name"] } }, ...parallel };
    default:
      throw callerError("tool_choice.type", `tool_choice type ${JSON.stringify(choice["type"])} is not one of auto, any, tool, none`);
  }
}

/** Content as blocks: a string is one text block. */
function blocksOf(content: unknown): JsonObject[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** The text of a system prompt or a tool result (a string, or text blocks). */
function plainText(content: unknown, field: string): string {
  return blocksOf(content)
    .map((block, i) => {
      if (block["type"] !== "text" || typeof block["text"] !== "string") {
        throw callerError(`${field}[${i}]`, `only text blocks can be sent here to this provider, not ${JSON.stringify(block["type"])}`);
      }
      return block["text"];
    })
    .join("\n");
}

function userMessages(content: unknown, field: string): JsonObject[] {
  const results: JsonObject[] = [];
  const parts: JsonObject[] = [];
  blocksOf(content).forEach((block, i) => {
    const at = `${field}[${i}]`;
    switch (block["type"]) {
      case "text":
        parts.push({ type: "text", text: block["text"] });
        return;
      case "image":
        parts.push({ type: "image_url", image_url: { url: imageUrl(block, at) } });
        return;
      case "tool_result": {
        // A tool message holds text only: images of the result follow in the user message after the results.
        const content = blocksOf(block["content"]);
        content.forEach((part, j) => {
          if (part["type"] === "image") parts.push({ type: "image_url", image_url: { url: imageUrl(part, `${at}.content[${j}]`) } });
        });
        const text = plainText(content.filter((part) => part["type"] !== "image"), `${at}.content`);
        results.push({ role: "tool", tool_call_id: block["tool_use_id"], content: block["is_error"] === true && text === "" ? "error" : text });
        return;
      }
      default:
        throw callerError(`${at}.type`, `content block type ${JSON.stringify(block["type"])} cannot be sent to this provider (text, image and tool_result can)`);
    }
  });
  if (parts.length === 0) return results;
  // A plain-text turn stays a string, the form every OpenAI-compatible upstream takes.
  const onlyText = parts.every((part) => part["type"] === "text");
  const userContent = onlyText ? parts.map((part) => part["text"] as string).join("") : parts;
  return [...results, { role: "user", content: userContent }];
}

function assistantMessage(content: unknown, field: string): JsonObject {
  let text = "";
  const toolCalls: JsonObject[] = [];
  blocksOf(content).forEach((block, i) => {
    switch (block["type"]) {
      case "text":
        text += String(block["text"] ?? "");
        return;
      case "tool_use":
        toolCalls.push({ id: block["id"], type: "function", function: { name: block["name"], arguments: JSON.stringify(block["input"] ?? {}) } });
        return;
      case "thinking":
      case "redacted_thinking":
        // Reasoning of an earlier turn: chat has no field to send it back in.
        return;
      default:
        throw callerError(`${field}[${i}].type`, `content block type ${JSON.stringify(block["type"])} cannot be sent to this provider (text, tool_use and thinking can)`);
    }
  });
  const message: JsonObject = { role: "assistant", content: text === "" && toolCalls.length > 0 ? null : text };
  if (toolCalls.length > 0) message["tool_calls"] = toolCalls;
  return message;
}

/**
 * Providers whose chat API takes the output limit as max_completion_tokens (OpenAI's reasoning models refuse
 * max_tokens); the others get max_tokens, which every OpenAI-compatible API takes.
 */
const COMPLETION_TOKENS_PROVIDERS: ReadonlySet<string> = new Set(["openai", "azure"]);

/** The chat request equivalent to a Messages request for `provider` (stream set by the caller). */
export function toChatRequest(req: MessagesRequest, provider: string): ChatRequest {
  const messages: JsonObject[] = [];
  if (req["system"] !== undefined && req["system"] !== null) {
    const system = plainText(req["system"], "system");
    if (system !== "") messages.push({ role: "system", content: system });
  }
  req.messages.forEach((message, i) => {
    if (!isObject(message)) return;
    const at = `messages[${i}].content`;
    if (message["role"] === "assistant") messages.push(assistantMessage(message["content"], at));
    else messages.push(...userMessages(message["content"], at));
  });
  const chat: ChatRequest = { model: req.model, messages };
  chat[COMPLETION_TOKENS_PROVIDERS.has(provider) ? "max_completion_tokens" : "max_tokens"] = req.max_tokens;
  for (const field of ["temperature", "top_p"]) if (typeof req[field] === "number") chat[field] = req[field];
  if (Array.isArray(req["stop_sequences"]) && req["stop_sequences"].length > 0) chat["stop"] = req["stop_sequences"];
  const tools = chatTools(req["tools"]);
  if (tools) chat["tools"] = tools;
  const { toolChoice, parallel } = chatToolChoice(req["tool_choice"]);
  if (toolChoice !== undefined) chat["tool_choice"] = toolChoice;
  if (parallel === false) chat["parallel_tool_calls"] = false;
  const metadata = req["metadata"];
  if (isObject(metadata) && typeof metadata["user_id"] === "string") chat["user"] = metadata["user_id"];
  return chat;
}
