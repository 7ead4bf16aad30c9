/**
 * Bedrock Converse answers -> OpenAI: the whole response into a chat.completion, and ConverseStream's
 * events (messageStart, contentBlockStart/Delta/Stop, messageStop, metadata, exceptions) into chunks.
 */
import { isObject } from "../chat-translation/chat-input.js";
import { chatCompletion, ChatStreamTranslation, completionId, type AnswerToolCall } from "../chat-translation/chat-output.js";
import { streamEventObject } from "../http/upstream-http.js";
import type { SseEvent } from "../http/sse.js";
import { malformedAnswer, ProviderError, upstreamErrorMessage, type ProviderErrorType } from "../provider-error.js";
import type { JsonObject, TokenUsage } from "../types.js";
import { count } from "../usage.js";

/** Converse stopReason -> OpenAI finish_reason. */
export function converseFinishReason(stopReason: unknown): string | null {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter";
    default:
      return stopReason === undefined || stopReason === null ? null : "stop";
  }
}

/** The gateway's usage from a Converse usage object (cache reads and writes count as input). */
export function converseUsage(usage: unknown): TokenUsage {
  if (!isObject(usage)) return { input_tokens: 0, output_tokens: 0 };
  return {
    input_tokens: count(usage["inputTokens"]) + count(usage["cacheReadInputTokens"]) + count(usage["cacheWriteInputTokens"]),
    output_tokens: count(usage["outputTokens"]),
  };
}

/**
 * The chat.completion for a Converse response `provider` answered with `status`; one without
 * `output.message.content`, or with a toolUse block without its id or name, is malformed.
 */
export function fromConverseResponse(body: JsonObject, model: string, provider: string, status: number): JsonObject {
  const output = body["output"];
  const message = isObject(output) ? output["message"] : undefined;
  const blocks = isObject(message) ? message["content"] : undefined;
  if (!Array.isArray(blocks)) throw malformedAnswer(provider, status, "a response without output.message.content");
  let text: string | null = null;
  const toolCalls: AnswerToolCall[] = [];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (typeof block["text"] === "string") text = (text ?? "") + block["text"];
    const use = block["toolUse"];
    if (isObject(use)) {
      if (typeof use["toolUseId"] !== "string" || use["toolUseId"] === "" || typeof use["name"] !== "string" || use["name"] === "") {
        throw malformedAnswer(provider, status, "a toolUse block without a toolUseId or a name");
      }
      toolCalls.push({ id: use["toolUseId"], name: use["name"], arguments: JSON.stringify(use["input"] ?? {}) });
    }
  }
  return chatCompletion({ id: completionId(), model, text, toolCalls, finishReason: converseFinishReason(body["stopReason"]), usage: converseUsage(body["usage"]) });
}

/** The error type of a ConverseStream exception. */
function exceptionType(name: string): ProviderErrorType {
  if (name === "throttlingException" || name === "serviceQuotaExceededException") return "provider_rate_limited";
  if (name === "validationException") return "provider_bad_request";
  if (name === "accessDeniedException") return "provider_auth";
  return "provider_unavailable";
}

/** One ConverseStream's translation: events named by their event-stream type, exceptions as failures. */
export class ConverseStreamTranslation extends ChatStreamTranslation {
  /** Converse content block index -> OpenAI tool_calls index. */
  private readonly toolIndexes = new Map<number, number>();
  protected readonly endMarker = "messageStop";

  protected *onEvent(event: SseEvent): Generator<JsonObject> {
    if (event.event.startsWith("exception:") || event.event.startsWith("error:")) {
      const name = event.event.slice(event.event.indexOf(":") + 1);
      throw new ProviderError(this.provider, null, exceptionType(name), `${this.provider} failed mid-stream (${name}): ${upstreamErrorMessage(event.data)}`);
    }
    yield* this.onPayload(event.event, streamEventObject(this.provider, event.data));
  }

  private *onPayload(name: string, payload: JsonObject): Generator<JsonObject> {
    const index = typeof payload["contentBlockIndex"] === "number" ? payload["contentBlockIndex"] : -1;
    switch (name) {
      case "messageStart":
        yield this.chunks.chunk({ role: "assistant", content: "", refusal: null });
        return;
      case "contentBlockStart": {
        const start = isObject(payload["start"]) ? payload["start"] : {};
        const use = start["toolUse"];
        if (isObject(use)) {
          const toolIndex = this.toolIndexes.size;
          this.toolIndexes.set(index, toolIndex);
          yield this.chunks.chunk({ tool_calls: [{ index: toolIndex, id: use["toolUseId"], type: "function", function: { name: use["name"], arguments: "" } }] });
        }
        return;
      }
      case "contentBlockDelta": {
        const delta = isObject(payload["delta"]) ? payload["delta"] : {};
        if (typeof delta["text"] === "string") yield this.chunks.chunk({ content: delta["text"] });
        const use = delta["toolUse"];
        const toolIndex = this.toolIndexes.get(index);
        if (isObject(use) && typeof use["input"] === "string" && toolIndex !== undefined) {
          yield this.chunks.chunk({ tool_calls: [{ index: toolIndex, function: { arguments: use["input"] } }] });
        }
        return;
      }
      case "messageStop":
        this.complete = true;
        yield this.chunks.chunk({}, converseFinishReason(payload["stopReason"]) ?? "stop");
        return;
      case "metadata":
        if (isObject(payload["usage"])) this.usageSeen = converseUsage(payload["usage"]);
        return;
      default:
        // contentBlockStop, and event types added later, carry nothing an OpenAI chunk shows.
        return;
    }
  }
}
