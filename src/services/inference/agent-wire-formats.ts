/**
 * How the agent loop reads and writes each wire format it runs: the tool calls of an answer, the next
 * request with their results appended, and the answer of a mixed turn (some calls run, some handed back).
 * Chat completions, the Responses API and Anthropic Messages each keep their own shapes.
 */
import { randomBytes } from "node:crypto";
import { isObject } from "../../providers/chat-translation/chat-input.js";
import type { JsonObject } from "../../providers/types.js";
import { followUpToolChoice, type AgentWire } from "./agent-tools.js";
import { executedSummary, type ExecutedCall } from "./agent-summary.js";

/** A tool call the model made, in either wire format. */
export interface ModelCall {
  /** tool_call_id (chat) or call_id (Responses). */
  id: string;
  name: string;
  /** The JSON-encoded arguments as the model sent them. */
  arguments: string;
  /** The call as it appeared in the answer, handed back untouched when it stays pending. */
  raw: JsonObject;
}

/** How the loop reads and writes one wire format. */
export interface WireFormat {
  /** The function calls of an answer, in order. */
  calls(answer: JsonObject): ModelCall[];
  /** The next request: the answer's calls and their results appended to the conversation. */
  followUp(request: JsonObject, answer: JsonObject, executed: readonly ExecutedCall[]): JsonObject;
  /** The answer of a mixed turn: the summary of what ran plus only the pending calls. */
  mixed(answer: JsonObject, executed: readonly ExecutedCall[], pending: readonly ModelCall[]): JsonObject;
}

function firstChoice(answer: JsonObject): { choice: JsonObject; message: JsonObject } | null {
  const choices = answer["choices"];
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice["message"])) return null;
  return { choice, message: choice["message"] };
}

/** Chat completions: tool_calls of choices[0]; results as `role: tool` messages. */
const CHAT_FORMAT: WireFormat = {
  calls(answer) {
    const calls = firstChoice(answer)?.message["tool_calls"];
    if (!Array.isArray(calls)) return [];
    return calls.filter(isObject).map((call) => {
      const fn = isObject(call["function"]) ? call["function"] : isObject(call["custom"]) ? call["custom"] : {};
      const args = fn["arguments"] ?? fn["input"];
      return { id: String(call["id"] ?? ""), name: String(fn["name"] ?? ""), arguments: typeof args === "string" ? args : "", raw: call };
    });
  },
  followUp(request, answer, executed) {
    const message = firstChoice(answer)?.message ?? {};
    // Only the fields an assistant message takes as input: echoing response-only fields (refusal,
    // annotations, audio) back is refused by some upstreams.
    const assistant: JsonObject = { role: "assistant", content: message["content"] ?? null, tool_calls: message["tool_calls"] };
    const messages = Array.isArray(request["messages"]) ? request["messages"] : [];
    const results = executed.map((call) => ({ role: "tool", tool_call_id: call.id, content: call.content }));
    return withToolChoice({ ...request, messages: [...messages, assistant, ...results] });
  },
  mixed(answer, executed, pending) {
    const first = firstChoice(answer);
    if (first === null) return answer;
    const message = { ...first.message, content: executedSummary(executed), tool_calls: pending.map((call) => call.raw) };
    const choices = answer["choices"] as unknown[];
    return { ...answer, choices: [{ ...first.choice, message, finish_reason: "stop" }, ...choices.slice(1)] };
  },
};

/** The objects of a list field of an answer (Responses `output`, Messages `content`). */
function objectsIn(answer: JsonObject, field: "output" | "content"): JsonObject[] {
  const list = answer[field];
  return Array.isArray(list) ? list.filter(isObject) : [];
}

function outputItems(answer: JsonObject): JsonObject[] {
  return objectsIn(answer, "output");
}

/** The Responses API: function_call output items; results as function_call_output input items. */
const RESPONSES_FORMAT: WireFormat = {
  calls(answer) {
    return outputItems(answer)
      .filter((item) => item["type"] === "function_call")
      .map((item) => ({
        id: String(item["call_id"] ?? ""),
        name: String(item["name"] ?? ""),
        arguments: typeof item["arguments"] === "string" ? item["arguments"] : "",
        raw: item,
      }));
  },
  followUp(request, answer, executed) {
    const input = request["input"];
    // The loop is stateless (it never relies on the upstream storing responses): the whole turn goes back
    // as input, the way OpenAI documents function calling.
    const prior = typeof input === "string" ? [{ role: "user", content: input }] : Array.isArray(input) ? input : [];
    const results = executed.map((call) => ({ type: "function_call_output", call_id: call.id, output: call.content }));
    return withToolChoice({ ...request, input: [...prior, ...outputItems(answer), ...results] });
  },
  mixed(answer, executed, pending) {
    // Reasoning and other items stay; the model's own message items give way to the summary, and of the
    // function calls only the pending ones are handed back.
    const other = outputItems(answer).filter((item) => item["type"] !== "message" && item["type"] !== "function_call");
    const summary = {
      type: "message",
      id: `msg_gw_${randomBytes(12).toString("hex")}`,
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: executedSummary(executed), annotations: [] }],
    };
    return { ...answer, output: [...other, summary, ...pending.map((call) => call.raw)] };
  },
};

function contentBlocks(answer: JsonObject): JsonObject[] {
  return objectsIn(answer, "content");
}

/** Anthropic Messages: tool_use content blocks; results as tool_result blocks of the next user turn. */
const MESSAGES_FORMAT: WireFormat = {
  calls(answer) {
    return contentBlocks(answer)
      .filter((block) => block["type"] === "tool_use")
      .map((block) => ({ id: String(block["id"] ?? ""), name: String(block["name"] ?? ""), arguments: JSON.stringify(block["input"] ?? {}), raw: block }));
  },
  followUp(request, answer, executed) {
    const messages = Array.isArray(request["messages"]) ? request["messages"] : [];
    const results = executed.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: call.content, ...(call.isError ? { is_error: true } : {}) }));
    const next: JsonObject = { ...request, messages: [...messages, { role: "assistant", content: answer["content"] }, { role: "user", content: results }] };
    // A forced choice (any, or a named tool) becomes auto, so the model can answer once it has the results.
    const choice = request["tool_choice"];
    if (isObject(choice) && (choice["type"] === "any" || choice["type"] === "tool")) {
      next["tool_choice"] = { type: "auto", ...(choice["disable_parallel_tool_use"] === true ? { disable_parallel_tool_use: true } : {}) };
    }
    return next;
  },
  mixed(answer, executed, pending) {
    // Thinking stays; the model's text gives way to the summary, and of the tool uses only the pending ones are handed back.
    const other = contentBlocks(answer).filter((block) => block["type"] !== "text" && block["type"] !== "tool_use");
    const content = [...other, { type: "text", text: executedSummary(executed) }, ...pending.map((call) => call.raw)];
    return { ...answer, content, stop_reason: "end_turn", stop_sequence: null };
  },
};

/** Each wire format's reader and writer. */
export const WIRE_FORMATS: Readonly<Record<AgentWire, WireFormat>> = { chat: CHAT_FORMAT, responses: RESPONSES_FORMAT, messages: MESSAGES_FORMAT };

/** The request with its tool choice made fit for the follow-up call, where a forced choice would loop. */
function withToolChoice(request: JsonObject): JsonObject {
  if (request["tool_choice"] === undefined) return request;
  return { ...request, tool_choice: followUpToolChoice(request["tool_choice"]) };
}
