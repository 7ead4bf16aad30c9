/** OpenAI Responses request -> chat-completions request, for providers that only speak chat. */
import { GatewayError } from "../../errors.js";
import type { ChatRequest, JsonObject, ResponsesRequest } from "../types.js";

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function callerError(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { type: "caller_invalid_request", field, httpStatus: 400 });
}

/** Responses content parts -> chat content parts. */
function chatContent(content: unknown, field: string): unknown {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw callerError(field, "content must be a string or an array of parts");
  return content.map((part, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(part)) throw callerError(at, "a content part must be an object");
    if ((part["type"] === "input_text" || part["type"] === "output_text") && typeof part["text"] === "string") return { type: "text", text: part["text"] };
    if (part["type"] === "input_image" && typeof part["image_url"] === "string") return { type: "image_url", image_url: { url: part["image_url"] } };
    throw callerError(`${at}.type`, `part type ${JSON.stringify(part["type"])} is not supported by this provider (use input_text, output_text or input_image with image_url)`);
  });
}

function chatMessages(req: ResponsesRequest): JsonObject[] {
  const messages: JsonObject[] = [];
  if (typeof req["instructions"] === "string" && req["instructions"] !== "") messages.push({ role: "system", content: req["instructions"] });
  const input = req.input;
  if (typeof input === "string") {
    messages.push({ role: "user", content: input });
    return messages;
  }
  if (!Array.isArray(input)) throw callerError("input", "input must be a string or an array of items");
  input.forEach((item, i) => {
    const at = `input[${i}]`;
    if (!isObject(item)) throw callerError(at, "an input item must be an object");
    const type = item["type"] ?? "message";
    if (type === "message") {
      const role = item["role"];
      if (role !== "user" && role !== "assistant" && role !== "system" && role !== "developer") {
        throw callerError(`${at}.role`, "role must be user, assistant, system or developer");
      }
      messages.push({ role, content: chatContent(item["content"], `${at}.content`) });
    } else if (type === "function_call") {
      const call = { id: item["call_id"], type: "function", function: { name: item["name"], arguments: item["arguments"] ?? "{}" } };
      const last = messages[messages.length - 1];
      // Consecutive calls are one assistant turn with several tool calls.
      if (last && last["role"] === "assistant" && Array.isArray(last["tool_calls"]) && last["content"] === null) last["tool_calls"].push(call);
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") {
      const output = item["output"];
      messages.push({ role: "tool", tool_call_id: item["call_id"], content: typeof output === "string" ? output : JSON.stringify(output) });
    } else {
      throw callerError(`${at}.type`, `input item type ${JSON.stringify(type)} is not supported by this provider`);
    }
  });
  return messages;
}

function chatTools(tools: unknown): JsonObject[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw callerError("tools", "tools must be an array");
  return tools.map((tool, i) => {
    if (!isObject(tool) || tool["type"] !== "function" || typeof tool["name"] !== "string") {
      throw callerError(`tools[${i}]`, "only function tools {type: \"function\", name, parameters} are supported by this provider");
    }
    const fn: JsonObject = { name: tool["name"] };
    if (tool["description"] !== undefined) fn["description"] = tool["description"];
    if (tool["parameters"] !== undefined) fn["parameters"] = tool["parameters"];
    return { type: "function", function: fn };
  });
}

/** The chat request equivalent to a Responses request. */
export function toChatRequest(req: ResponsesRequest): ChatRequest {
  const chat: ChatRequest = { model: req.model, messages: chatMessages(req) };
  const tools = chatTools(req["tools"]);
  if (tools) chat["tools"] = tools;
  const choice = req["tool_choice"];
  if (isObject(choice) && choice["type"] === "function") chat["tool_choice"] = { type: "function", function: { name: choice["name"] } };
  else if (choice !== undefined) chat["tool_choice"] = choice;
  if (req["max_output_tokens"] !== undefined) chat["max_tokens"] = req["max_output_tokens"];
  for (const field of ["temperature", "top_p", "parallel_tool_calls", "user"]) {
    if (req[field] !== undefined) chat[field] = req[field];
  }
  return chat;
}
