/**
 * POST /v1/responses (the OpenAI Responses API): checks the fields the gateway reads, runs the inference
 * service with method "responses", and answers with the response object or an SSE stream in the
 * Responses format (`event: <type>` plus `data: <json>` per event, no `[DONE]`). Everything else is the
 * /v1 handler chat completions use: the OpenAI error envelope, aborts, fallbacks.
 */
import type { JsonObject, ResponsesRequest } from "../../providers/types.js";
import type { RequestScope } from "../../services/context.js";
import type { MethodBody } from "../../inference/calls.js";
import {
  badRequest,
  checkStreamAndFallbacks,
  createV1Handler,
  requireModel,
  type ChatCompletionsOptions,
  type SseFraming,
  type V1Endpoint,
} from "./chat-completions.js";
import type { Req, Res } from "../node-http.js";

/** What the handler needs (the same as every /v1 inference handler). */
export type ResponsesOptions = ChatCompletionsOptions;

/** Checks model, input, stream and fallbacks; everything else passes through to the upstream unchanged. */
export function validateResponsesBody(body: JsonObject): Extract<MethodBody, { method: "responses" }> {
  requireModel(body);
  const input = body["input"];
  if (typeof input !== "string" && !(Array.isArray(input) && input.length > 0)) {
    throw badRequest("input is required: a string, or a non-empty list of input items", "input");
  }
  checkStreamAndFallbacks(body);
  // The checks above are all the type claims: the body itself goes on, not a copy of it.
  return { method: "responses", body: body as ResponsesRequest };
}

/** The `event:` line of an event; none when its type could break the SSE framing. */
function eventLine(event: JsonObject): string {
  const type = event["type"];
  return typeof type === "string" && type !== "" && !/[\r\n]/.test(type) ? `event: ${type}\n` : "";
}

/** Responses SSE: each event under its type; a failure is an `error` event numbered after the last one. */
function responsesFraming(): SseFraming {
  let nextSequence = 0;
  return {
    event(event) {
      const sequence = event["sequence_number"];
      if (typeof sequence === "number" && Number.isFinite(sequence)) nextSequence = Math.max(nextSequence, sequence + 1);
      return `${eventLine(event)}data: ${JSON.stringify(event)}\n\n`;
    },
    error(envelope) {
      // The Responses API's own error event carries code, message and param at the top; the openai SDKs
      // raise an APIError only for an `error` member, so the event carries the envelope's object as well.
      const error = (envelope["error"] ?? {}) as JsonObject;
      const event = { type: "error", sequence_number: nextSequence, code: error["code"] ?? null, message: error["message"] ?? "", param: error["param"] ?? null, error };
      return `event: error\ndata: ${JSON.stringify(event)}\n\n`;
    },
    end: "",
  };
}

const RESPONSES_ENDPOINT: V1Endpoint = {
  name: "responses request",
  method: "responses",
  validate: validateResponsesBody,
  framing: responsesFraming,
};

/** Builds the handler for POST /v1/responses. */
export function createResponsesHandler(opts: ResponsesOptions): (req: Req, res: Res, scope?: RequestScope) => Promise<void> {
  return createV1Handler(opts, RESPONSES_ENDPOINT);
}
