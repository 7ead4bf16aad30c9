/**
 * An OpenAI chat-completions request read into a provider-neutral conversation (system text, then
 * alternating user/assistant turns of text, image, tool-call and tool-result parts), so the adapters
 * that speak another format (Bedrock Converse, Gemini) each map parts instead of re-reading OpenAI JSON.
 */
import { GatewayError } from "../../errors.js";
import type { ChatRequest, JsonObject } from "../types.js";

/** One piece of a turn. */
export type ChatPart =
  | { kind: "text"; text: string }
  /** An inline image: its media type and base64 data. */
  | { kind: "image"; mediaType: string; data: string }
  /** An image by http(s) URL, for upstreams that fetch images themselves. */
  | { kind: "image-url"; url: string }
  | { kind: "tool-call"; id: string; name: string; input: JsonObject }
  /** A tool's answer; `name` is the called tool's, found through the call's id. */
  | { kind: "tool-result"; id: string; name: string; text: string };

/** Consecutive messages of one role merged into one turn (tool results are the user's). */
export interface ChatTurn {
  role: "user" | "assistant";
  parts: ChatPart[];
}

/** The conversation of a request. */
export interface ChatConversation {
  /** System and developer messages' text, in order. */
  system: string[];
  turns: ChatTurn[];
}

/** A function tool the model may call. */
export interface ChatTool {
  name: string;
  description: string | null;
  /** JSON schema of the arguments. */
  parameters: JsonObject;
}

/** OpenAI's tool_choice, read. */
export type ChatToolChoice = { kind: "auto" } | { kind: "required" } | { kind: "none" } | { kind: "tool"; name: string };

/** The sampling settings most upstreams share. */
export interface ChatSampling {
  maxTokens: number | null;
  temperature: number | null;
  topP: number | null;
  topK: number | null;
  stop: string[];
}

/** A 400 naming the request field at fault. */
export function callerError(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { type: "caller_invalid_request", field, httpStatus: 400 });
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An OpenAI image_url (a base64 data URL or an http(s) URL) as a part; a 400 naming `field` otherwise. */
export function imagePart(url: string, field: string): ChatPart {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { kind: "image", mediaType: data[1] as string, data: data[2] as string };
  if (/^https?:\/\//i.test(url)) return { kind: "image-url", url };
  throw callerError(field, "an image_url must be a base64 data URL (data:<media type>;base64,...) or an http(s) URL");
}

function contentParts(content: unknown, field: string): ChatPart[] {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return content === "" ? [] : [{ kind: "text", text: content }];
  if (!Array.isArray(content)) throw callerError(field, "content must be a string or an array of content parts");
  return content.map((part, i): ChatPart => {
    const at = `${field}[${i}]`;
    if (!isObject(part)) throw callerError(at, "a content part must be an object");
    if (part["type"] === "text" && typeof part["text"] === "string") return { kind: "text", text: part["text"] };
    if (part["type"] === "image_url") {
      const image = part["image_url"];
      const url = typeof image === "string" ? image : isObject(image) ? image["url"] : undefined;
      if (typeof url !== "string") throw callerError(`${at}.image_url.url`, "an image part needs a url");
      return imagePart(url, `${at}.image_url.url`);
    }
    throw callerError(`${at}.type`, `content part type ${JSON.stringify(part["type"])} is not supported by this provider (use text or image_url)`);
  });
}

function textOf(content: unknown, field: string): string {
  return contentParts(content, field)
    .map((part) => {
      if (part.kind !== "text") throw callerError(field, "only text is allowed here");
      return part.text;
    })
    .join("\n");
}

function toolCalls(raw: unknown, field: string, names: Map<string, string>): ChatPart[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw callerError(field, "tool_calls must be an array");
  return raw.map((call, i): ChatPart => {
    const at = `${field}[${i}]`;
    if (!isObject(call) || !isObject(call["function"]) || typeof call["id"] !== "string" || typeof call["function"]["name"] !== "string") {
      throw callerError(at, "a tool call needs an id and a function {name, arguments}");
    }
    const args = call["function"]["arguments"];
    let input: unknown = {};
    if (typeof args === "string" && args.trim() !== "") {
      try {
        input = JSON.parse(args);
      } catch {
        throw callerError(`${at}.function.arguments`, "arguments must be a JSON object encoded as a string");
      }
    }
    if (!isObject(input)) throw callerError(`${at}.function.arguments`, "arguments must encode a JSON object");
    names.set(call["id"], call["function"]["name"]);
    return { kind: "tool-call", id: call["id"], name: call["function"]["name"], input };
  });
}

function push(turns: ChatTurn[], role: "user" | "assistant", parts: ChatPart[]): void {
  if (parts.length === 0) return;
  const last = turns[turns.length - 1];
  if (last && last.role === role) last.parts.push(...parts);
  else turns.push({ role, parts });
}

/** Reads `messages`; throws a 400 naming the message at fault. */
export function readConversation(req: ChatRequest): ChatConversation {
  if (!Array.isArray(req.messages)) throw callerError("messages", "messages must be an array");
  const system: string[] = [];
  const turns: ChatTurn[] = [];
  const toolNames = new Map<string, string>();
  req.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isObject(message)) throw callerError(at, "a message must be an object");
    const role = message["role"];
    if (role === "system" || role === "developer") system.push(textOf(message["content"], `${at}.content`));
    else if (role === "user") push(turns, "user", contentParts(message["content"], `${at}.content`));
    else if (role === "assistant") {
      push(turns, "assistant", [...contentParts(message["content"], `${at}.content`), ...toolCalls(message["tool_calls"], `${at}.tool_calls`, toolNames)]);
    } else if (role === "tool") {
      const id = message["tool_call_id"];
      if (typeof id !== "string") throw callerError(`${at}.tool_call_id`, "a tool message needs the tool_call_id it answers");
      const name = toolNames.get(id);
      if (name === undefined) throw callerError(`${at}.tool_call_id`, `no earlier assistant message has a tool call with id ${JSON.stringify(id)}`);
      push(turns, "user", [{ kind: "tool-result", id, name, text: textOf(message["content"], `${at}.content`) }]);
    } else {
      throw callerError(`${at}.role`, `role ${JSON.stringify(role)} is not supported (use system, developer, user, assistant or tool)`);
    }
  });
  return { system, turns };
}

/** Reads `tools` (function tools only); null when absent. */
export function readTools(req: ChatRequest): ChatTool[] | null {
  const tools = req["tools"];
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) throw callerError("tools", "tools must be an array");
  return tools.map((tool, i) => {
    const fn = isObject(tool) ? tool["function"] : undefined;
    if (!isObject(tool) || tool["type"] !== "function" || !isObject(fn) || typeof fn["name"] !== "string") {
      throw callerError(`tools[${i}]`, "each tool must be {type: \"function\", function: {name, description?, parameters?}}");
    }
    return {
      name: fn["name"],
      description: typeof fn["description"] === "string" ? fn["description"] : null,
      parameters: isObject(fn["parameters"]) ? fn["parameters"] : { type: "object", properties: {} },
    };
  });
}

/** Reads `tool_choice`; null when absent. */
export function readToolChoice(req: ChatRequest): ChatToolChoice | null {
  const choice = req["tool_choice"];
  if (choice === undefined || choice === null) return null;
  if (choice === "auto" || choice === "required" || choice === "none") return { kind: choice };
  if (isObject(choice) && isObject(choice["function"]) && typeof choice["function"]["name"] === "string") return { kind: "tool", name: choice["function"]["name"] };
  throw callerError("tool_choice", "tool_choice must be auto, required, none or {type: \"function\", function: {name}}");
}

function numberOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** Reads max_completion_tokens (or max_tokens), temperature, top_p, top_k and stop. */
export function readSampling(req: ChatRequest): ChatSampling {
  const stop = req["stop"];
  return {
    maxTokens: numberOrNull(req["max_completion_tokens"] ?? req["max_tokens"]),
    temperature: numberOrNull(req["temperature"]),
    topP: numberOrNull(req["top_p"]),
    topK: numberOrNull(req["top_k"]),
    stop: typeof stop === "string" ? [stop] : Array.isArray(stop) ? stop.filter((s): s is string => typeof s === "string") : [],
  };
}
