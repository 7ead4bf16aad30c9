/**
 * OpenAI chat-completions request -> Anthropic Messages request. Anthropic rejects fields it does not
 * know, so only fields with a meaning on both sides are carried over.
 */
import { imagePart, readConversation, readSampling, readToolChoice, readTools, type ChatPart, type ChatToolChoice } from "../chat-translation/chat-input.js";
import type { ChatRequest, JsonObject } from "../types.js";

/** Anthropic requires max_tokens; OpenAI callers often omit it. */
export const DEFAULT_MAX_TOKENS = 4096;

function block(part: ChatPart): JsonObject {
  switch (part.kind) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      return { type: "image", source: { type: "base64", media_type: part.mediaType, data: part.data } };
    case "image-url":
      return { type: "image", source: { type: "url", url: part.url } };
    case "tool-call":
      return { type: "tool_use", id: part.id, name: part.name, input: part.input };
    case "tool-result":
      return { type: "tool_result", tool_use_id: part.id, content: part.text };
  }
}

/** An OpenAI image_url (a data URL or an http(s) URL) as an Anthropic image block. */
export function imageBlock(url: string, field: string): JsonObject {
  return block(imagePart(url, field));
}

function toolChoice(choice: ChatToolChoice | null, parallel: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === null) out = parallel === false ? { type: "auto" } : undefined;
  else if (choice.kind === "required") out = { type: "any" };
  else if (choice.kind === "tool") out = { type: "tool", name: choice.name };
  else out = { type: choice.kind };
  if (out && parallel === false && out["type"] !== "none") out["disable_parallel_tool_use"] = true;
  return out;
}

/** Builds the Anthropic Messages body for `req` (stream set by the caller). */
export function toAnthropicRequest(req: ChatRequest): JsonObject {
  const conversation = readConversation(req);
  const messages = conversation.turns.map((turn) => ({ role: turn.role, content: turn.parts.map(block) }));
  const body: JsonObject = { model: req.model, messages };
  const sampling = readSampling(req);
  body["max_tokens"] = sampling.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (conversation.system.length > 0) body["system"] = conversation.system.join("\n\n");
  if (sampling.temperature !== null) body["temperature"] = sampling.temperature;
  if (sampling.topP !== null) body["top_p"] = sampling.topP;
  if (sampling.topK !== null) body["top_k"] = sampling.topK;
  if (sampling.stop.length > 0) body["stop_sequences"] = sampling.stop;
  const tools = readTools(req);
  if (tools) {
    body["tools"] = tools.map((tool) => ({ name: tool.name, ...(tool.description !== null ? { description: tool.description } : {}), input_schema: tool.parameters }));
  }
  const choice = toolChoice(readToolChoice(req), req["parallel_tool_calls"]);
  if (choice) body["tool_choice"] = choice;
  if (typeof req["user"] === "string") body["metadata"] = { user_id: req["user"] };
  return body;
}
