/**
 * OpenAI chat-completions request -> Anthropic Messages request. Anthropic rejects fields it does not
 * know, so only fields with a meaning on both sides are carried over.
 */
import { GatewayError } from "../../errors.js";
import type { ChatRequest, JsonObject } from "../types.js";

/** Anthropic requires max_tokens; OpenAI callers often omit it. */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = JsonObject;
interface AnthropicMessage {
  role: "user" | "assistant";
  content: Block[];
}

function callerError(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { type: "caller_invalid_request", field, httpStatus: 400 });
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An OpenAI image_url (a data URL or an http(s) URL) as an Anthropic image block. */
export function imageBlock(url: string, field: string): Block {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw callerError(field, "an image_url must be a base64 data URL (data:<media type>;base64,...) or an http(s) URL");
}

/** The way back: an Anthropic image block's source as an OpenAI image URL (base64 data become a data URL). */
export function imageUrl(block: Block, field: string): string {
  const source = block["source"];
  if (isObject(source) && source["type"] === "base64" && typeof source["media_type"] === "string" && typeof source["data"] === "string") {
    return `data:${source["media_type"]};base64,${source["data"]}`;
  }
  if (isObject(source) && source["type"] === "url" && typeof source["url"] === "string" && /^https?:\/\//i.test(source["url"])) return source["url"];
  throw callerError(`${field}.source`, "an image source must be {type: \"base64\", media_type, data} or {type: \"url\", url} with an http(s) URL");
}

/** Message content (a string or an array of parts) as Anthropic content blocks. */
function contentBlocks(content: unknown, field: string): Block[] {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw callerError(field, "content must be a string or an array of content parts");
  return content.map((part, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(part)) throw callerError(at, "a content part must be an object");
    if (part["type"] === "text" && typeof part["text"] === "string") return { type: "text", text: part["text"] };
    if (part["type"] === "image_url") {
      const image = part["image_url"];
      const url = typeof image === "string" ? image : isObject(image) ? image["url"] : undefined;
      if (typeof url !== "string") throw callerError(`${at}.image_url.url`, "an image part needs a url");
      return imageBlock(url, `${at}.image_url.url`);
    }
    throw callerError(`${at}.type`, `content part type ${JSON.stringify(part["type"])} is not supported for anthropic (use text or image_url)`);
  });
}

/** Plain text of a system or tool message's content. */
function textOf(content: unknown, field: string): string {
  return contentBlocks(content, field)
    .map((block) => {
      if (block["type"] !== "text") throw callerError(field, "only text is allowed here");
      return block["text"] as string;
    })
    .join("\n");
}

function toolUseBlocks(toolCalls: unknown, field: string): Block[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw callerError(field, "tool_calls must be an array");
  return toolCalls.map((call, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(call) || !isObject(call["function"]) || typeof call["id"] !== "string") {
      throw callerError(at, "a tool call needs an id and a function {name, arguments}");
    }
    const fn = call["function"];
    const args = fn["arguments"];
    let input: unknown = {};
    if (typeof args === "string" && args.trim() !== "") {
      try {
        input = JSON.parse(args);
      } catch {
        throw callerError(`${at}.function.arguments`, "arguments must be a JSON object encoded as a string");
      }
    }
    if (!isObject(input)) throw callerError(`${at}.function.arguments`, "arguments must encode a JSON object");
    return { type: "tool_use", id: call["id"], name: fn["name"], input };
  });
}

/** Appends, merging into the previous message of the same role: Anthropic wants roles to alternate. */
function push(messages: AnthropicMessage[], role: "user" | "assistant", blocks: Block[]): void {
  const last = messages[messages.length - 1];
  if (last && last.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

function translateTools(tools: unknown): Block[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw callerError("tools", "tools must be an array");
  return tools.map((tool, i) => {
    const fn = isObject(tool) ? tool["function"] : undefined;
    if (!isObject(tool) || tool["type"] !== "function" || !isObject(fn) || typeof fn["name"] !== "string") {
      throw callerError(`tools[${i}]`, "each tool must be {type: \"function\", function: {name, description?, parameters?}}");
    }
    const out: Block = { name: fn["name"], input_schema: isObject(fn["parameters"]) ? fn["parameters"] : { type: "object", properties: {} } };
    if (typeof fn["description"] === "string") out["description"] = fn["description"];
    return out;
  });
}

/** The way back: Anthropic tools as OpenAI function tools; server tools have no OpenAI equivalent. */
export function chatTools(tools: unknown): Block[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw callerError("tools", "tools must be an array");
  return tools.map((tool, i) => {
    if (!isObject(tool) || typeof tool["name"] !== "string") throw callerError(`tools[${i}]`, "each tool must be {name, description?, input_schema}");
    if (tool["type"] !== undefined && tool["type"] !== null && tool["type"] !== "custom") {
      throw callerError(`tools[${i}].type`, `tool type ${JSON.stringify(tool["type"])} is a server tool that only Anthropic runs; route this request to an anthropic provider or leave the tool out`);
    }
    const fn: Block = { name: tool["name"], parameters: isObject(tool["input_schema"]) ? tool["input_schema"] : { type: "object", properties: {} } };
    if (typeof tool["description"] === "string") fn["description"] = tool["description"];
    return { type: "function", function: fn };
  });
}

/** The way back: Anthropic tool_choice as OpenAI tool_choice and parallel_tool_calls. */
export function chatToolChoice(choice: unknown): { toolChoice?: unknown; parallel?: false } {
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

function translateToolChoice(choice: unknown, parallel: unknown): Block | undefined {
  let out: Block | undefined;
  if (choice === undefined || choice === null) out = parallel === false ? { type: "auto" } : undefined;
  else if (choice === "auto") out = { type: "auto" };
  else if (choice === "required") out = { type: "any" };
  else if (choice === "none") out = { type: "none" };
  else if (isObject(choice) && isObject(choice["function"]) && typeof choice["function"]["name"] === "string") {
    out = { type: "tool", name: choice["function"]["name"] };
  } else throw callerError("tool_choice", "tool_choice must be auto, required, none or {type: \"function\", function: {name}}");
  if (out && parallel === false && out["type"] !== "none") out["disable_parallel_tool_use"] = true;
  return out;
}

/** Builds the Anthropic Messages body for `req` (stream set by the caller). */
export function toAnthropicRequest(req: ChatRequest): JsonObject {
  if (!Array.isArray(req.messages)) throw callerError("messages", "messages must be an array");
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  req.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isObject(message)) throw callerError(at, "a message must be an object");
    const role = message["role"];
    if (role === "system" || role === "developer") {
      system.push(textOf(message["content"], `${at}.content`));
    } else if (role === "user") {
      push(messages, "user", contentBlocks(message["content"], `${at}.content`));
    } else if (role === "assistant") {
      const blocks = [...contentBlocks(message["content"], `${at}.content`), ...toolUseBlocks(message["tool_calls"], `${at}.tool_calls`)];
      push(messages, "assistant", blocks);
    } else if (role === "tool") {
      if (typeof message["tool_call_id"] !== "string") throw callerError(`${at}.tool_call_id`, "a tool message needs the tool_call_id it answers");
      push(messages, "user", [{ type: "tool_result", tool_use_id: message["tool_call_id"], content: textOf(message["content"], `${at}.content`) }]);
    } else {
      throw callerError(`${at}.role`, `role ${JSON.stringify(role)} is not supported (use system, developer, user, assistant or tool)`);
    }
  });

  const body: JsonObject = { model: req.model, messages };
  const maxTokens = req["max_completion_tokens"] ?? req["max_tokens"];
  body["max_tokens"] = typeof maxTokens === "number" ? maxTokens : DEFAULT_MAX_TOKENS;
  if (system.length > 0) body["system"] = system.join("\n\n");
  for (const field of ["temperature", "top_p", "top_k"]) {
    if (typeof req[field] === "number") body[field] = req[field];
  }
  const stop = req["stop"];
  if (typeof stop === "string") body["stop_sequences"] = [stop];
  else if (Array.isArray(stop)) body["stop_sequences"] = stop;
  const tools = translateTools(req["tools"]);
  if (tools) body["tools"] = tools;
  const toolChoice = translateToolChoice(req["tool_choice"], req["parallel_tool_calls"]);
  if (toolChoice) body["tool_choice"] = toolChoice;
  if (typeof req["user"] === "string") body["metadata"] = { user_id: req["user"] };
  return body;
}
