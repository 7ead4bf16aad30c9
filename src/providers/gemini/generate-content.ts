/**
 * OpenAI chat <-> Gemini generateContent, shared by the Generative Language API (`gemini`) and Vertex AI
 * (`vertex`), which take the same body and answer in the same shape: contents and parts, a system
 * instruction, function declarations and calls, generationConfig, candidates with a finishReason, and
 * usageMetadata. Streams (`:streamGenerateContent?alt=sse`) send partial responses of the same shape.
 */
import { isObject, readConversation, readSampling, readToolChoice, readTools, type ChatPart } from "../chat-translation/chat-input.js";
import { chatCompletion, ChatStreamTranslation, completionId, toolCallId, type AnswerToolCall } from "../chat-translation/chat-output.js";
import { parseJsonObject, streamEventObject } from "../http/upstream-http.js";
import type { SseEvent } from "../http/sse.js";
import { malformedAnswer, ProviderError } from "../provider-error.js";
import type { ChatRequest, JsonObject, TokenUsage } from "../types.js";
import { count } from "../usage.js";

/** JSON-schema keywords Gemini's OpenAPI-subset schemas reject. */
const UNSUPPORTED_SCHEMA_KEYS = new Set(["$schema", "$id", "additionalProperties", "strict"]);

const IMAGE_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };

/** A JSON schema with the keywords Gemini rejects removed, at every depth. */
function geminiSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(geminiSchema);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) if (!UNSUPPORTED_SCHEMA_KEYS.has(key)) out[key] = geminiSchema(value);
  return out;
}

/** A tool result's content as the object functionResponse.response must be. */
function toolResponse(text: string): JsonObject {
  const parsed = parseJsonObject(text);
  return parsed ?? { content: text };
}

function part(chatPart: ChatPart): JsonObject {
  switch (chatPart.kind) {
    case "text":
      return { text: chatPart.text };
    case "image":
      return { inlineData: { mimeType: chatPart.mediaType, data: chatPart.data } };
    case "image-url": {
      const extension = /\.([a-z]+)(?:[?#].*)?$/i.exec(chatPart.url)?.[1]?.toLowerCase() ?? "";
      return { fileData: { mimeType: IMAGE_TYPES[extension] ?? "image/jpeg", fileUri: chatPart.url } };
    }
    case "tool-call":
      return { functionCall: { name: chatPart.name, args: chatPart.input } };
    case "tool-result":
      return { functionResponse: { name: chatPart.name, response: toolResponse(chatPart.text) } };
  }
}

/** Builds the generateContent body for `req` (the model goes in the URL). */
export function toGenerateContentRequest(req: ChatRequest): JsonObject {
  const conversation = readConversation(req);
  const body: JsonObject = {
    contents: conversation.turns.map((turn) => ({ role: turn.role === "assistant" ? "model" : "user", parts: turn.parts.map(part) })),
  };
  if (conversation.system.length > 0) body["systemInstruction"] = { parts: conversation.system.map((text) => ({ text })) };
  const sampling = readSampling(req);
  const generation: JsonObject = {};
  if (sampling.maxTokens !== null) generation["maxOutputTokens"] = sampling.maxTokens;
  if (sampling.temperature !== null) generation["temperature"] = sampling.temperature;
  if (sampling.topP !== null) generation["topP"] = sampling.topP;
  if (sampling.topK !== null) generation["topK"] = sampling.topK;
  if (sampling.stop.length > 0) generation["stopSequences"] = sampling.stop;
  const format = req["response_format"];
  if (isObject(format) && (format["type"] === "json_object" || format["type"] === "json_schema")) {
    generation["responseMimeType"] = "application/json";
    const schema = isObject(format["json_schema"]) ? format["json_schema"]["schema"] : undefined;
    if (isObject(schema)) generation["responseSchema"] = geminiSchema(schema);
  }
  if (Object.keys(generation).length > 0) body["generationConfig"] = generation;

  const tools = readTools(req);
  if (tools !== null && tools.length > 0) {
    body["tools"] = [
      {
        functionDeclarations: tools.map((tool) => {
          const declaration: JsonObject = { name: tool.name };
          if (tool.description !== null) declaration["description"] = tool.description;
          // Gemini refuses an object schema without properties: a tool without arguments declares none.
          const properties = tool.parameters["properties"];
          if (!(isObject(properties) && Object.keys(properties).length === 0)) declaration["parameters"] = geminiSchema(tool.parameters);
          return declaration;
        }),
      },
    ];
  }
  const choice = readToolChoice(req);
  if (choice !== null) {
    const mode = choice.kind === "auto" ? "AUTO" : choice.kind === "none" ? "NONE" : "ANY";
    body["toolConfig"] = { functionCallingConfig: { mode, ...(choice.kind === "tool" ? { allowedFunctionNames: [choice.name] } : {}) } };
  }
  return body;
}

/** Gemini finishReason -> OpenAI finish_reason; a stop with function calls is a tool_calls finish. */
export function geminiFinishReason(reason: unknown, hasToolCalls: boolean): string | null {
  if (reason === undefined || reason === null || reason === "FINISH_REASON_UNSPECIFIED") return null;
  if (reason === "MAX_TOKENS") return "length";
  if (reason === "SAFETY" || reason === "RECITATION" || reason === "BLOCKLIST" || reason === "PROHIBITED_CONTENT" || reason === "SPII" || reason === "IMAGE_SAFETY") {
    return "content_filter";
  }
  return hasToolCalls ? "tool_calls" : "stop";
}

/** The gateway's usage from usageMetadata (thinking tokens are output). */
export function geminiUsage(metadata: unknown): TokenUsage {
  if (!isObject(metadata)) return { input_tokens: 0, output_tokens: 0 };
  return { input_tokens: count(metadata["promptTokenCount"]), output_tokens: count(metadata["candidatesTokenCount"]) + count(metadata["thoughtsTokenCount"]) };
}

/**
 * The first candidate's visible text (thoughts left out) and function calls. A function call without a name
 * is malformed (`malformed` makes its error), and so is a whole answer (`whole`; a stream's events may carry
 * usage only) without a candidate, unless its prompt was blocked.
 */
function candidateContent(body: JsonObject, malformed: (what: string) => ProviderError, whole: boolean): { candidate: JsonObject; text: string | null; calls: AnswerToolCall[] } {
  const candidates = Array.isArray(body["candidates"]) ? body["candidates"] : [];
  const first: unknown = candidates[0];
  if (whole && !isObject(first) && blockedFinish(body) === null) throw malformed("a response without candidates or a blocked prompt's promptFeedback");
  const candidate = isObject(first) ? first : {};
  const content = isObject(candidate["content"]) ? candidate["content"] : {};
  const parts = Array.isArray(content["parts"]) ? content["parts"] : [];
  let text: string | null = null;
  const calls: AnswerToolCall[] = [];
  for (const p of parts) {
    if (!isObject(p) || p["thought"] === true) continue;
    if (typeof p["text"] === "string") text = (text ?? "") + p["text"];
    const call = p["functionCall"];
    if (isObject(call)) {
      if (typeof call["name"] !== "string" || call["name"] === "") throw malformed("a functionCall without a name");
      calls.push({ id: typeof call["id"] === "string" && call["id"] !== "" ? call["id"] : toolCallId(), name: call["name"], arguments: JSON.stringify(call["args"] ?? {}) });
    }
  }
  return { candidate, text, calls };
}

/** The finish of a response that has no candidate because the prompt was blocked. */
function blockedFinish(body: JsonObject): string | null {
  const feedback = body["promptFeedback"];
  return isObject(feedback) && typeof feedback["blockReason"] === "string" ? "content_filter" : null;
}

/** The chat.completion for a generateContent response `provider` answered with `status`. */
export function fromGenerateContentResponse(body: JsonObject, model: string, provider: string, status: number): JsonObject {
  const { candidate, text, calls } = candidateContent(body, (what) => malformedAnswer(provider, status, what), true);
  return chatCompletion({
    id: typeof body["responseId"] === "string" ? body["responseId"] : completionId(),
    model: typeof body["modelVersion"] === "string" ? body["modelVersion"] : model,
    text,
    toolCalls: calls,
    finishReason: geminiFinishReason(candidate["finishReason"], calls.length > 0) ?? blockedFinish(body),
    usage: geminiUsage(body["usageMetadata"]),
  });
}

/** One streamGenerateContent translation: each SSE event is a partial response. */
export class GenerateContentStreamTranslation extends ChatStreamTranslation {
  private started = false;
  private toolCalls = 0;
  protected readonly endMarker = "finishReason";

  protected *onEvent(event: SseEvent): Generator<JsonObject> {
    yield* this.onResponse(streamEventObject(this.provider, event.data));
  }

  private *onResponse(payload: JsonObject): Generator<JsonObject> {
    const error = payload["error"];
    if (isObject(error)) {
      throw new ProviderError(this.provider, null, "provider_unavailable", `${this.provider} failed mid-stream: ${String(error["message"] ?? JSON.stringify(error))}`);
    }
    if (isObject(payload["usageMetadata"])) this.usageSeen = geminiUsage(payload["usageMetadata"]);
    if (!this.started) {
      this.started = true;
      yield this.chunks.chunk({ role: "assistant", content: "", refusal: null });
    }
    const { candidate, text, calls } = candidateContent(payload, (what) => malformedAnswer(this.provider, 200, `a stream event holding ${what}`), false);
    if (text !== null && text !== "") yield this.chunks.chunk({ content: text });
    for (const call of calls) {
      yield this.chunks.chunk({ tool_calls: [{ index: this.toolCalls++, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] });
    }
    const finish = geminiFinishReason(candidate["finishReason"], this.toolCalls > 0) ?? blockedFinish(payload);
    if (finish !== null && !this.complete) {
      this.complete = true;
      yield this.chunks.chunk({}, finish);
    }
  }
}
