/**
 * The coding-agent compatibility endpoints of the Anthropic Messages API: POST /anthropic/v1/messages
 * (a message, or Anthropic's SSE stream: `event: <type>` plus `data: <json>` per event) and POST
 * /anthropic/v1/messages/count_tokens (`{input_tokens}`). Requests run through the same inference service
 * as /v1 (governance, routing, fallbacks, budgets, telemetry, agent mode); errors use Anthropic's envelope.
 */
import { RequestAbort } from "../../cancellation.js";
import type { JsonObject } from "../../providers/types.js";
import type { RequestScope } from "../../services/context.js";
import { asGatewayError } from "../../inference/calls.js";
import { dropRefusedBody } from "../refused-body.js";
import { ClientClosedError, readJsonBodyWithText } from "../rest/request-body.js";
import { sendJson, type Req, type Res } from "../node-http.js";
import { abortOnClose, createV1Handler, type ChatCompletionsOptions, type SseFraming, type V1Endpoint } from "../v1/chat-completions.js";
import { anthropicErrorBody } from "./anthropic-error.js";
import { validateCountTokensBody, validateMessagesBody } from "./messages-body.js";

/** Anthropic's SSE: each event under its type; a failure after the headers is an `error` event. */
const MESSAGES_FRAMING: SseFraming = {
  event: (event) => `event: ${String(event["type"])}\ndata: ${JSON.stringify(event)}\n\n`,
  error: (envelope) => `event: error\ndata: ${JSON.stringify(envelope)}\n\n`,
  end: "",
};

const MESSAGES_ENDPOINT: V1Endpoint = {
  name: "messages request",
  method: "messages",
  validate: (body) => ({ method: "messages", body: validateMessagesBody(body) }),
  framing: () => MESSAGES_FRAMING,
  errorBody: anthropicErrorBody,
};

/** Builds the handler for POST /anthropic/v1/messages. */
export function createMessagesHandler(opts: ChatCompletionsOptions): (req: Req, res: Res, scope?: RequestScope) => Promise<void> {
  return createV1Handler(opts, MESSAGES_ENDPOINT);
}

/** Builds the handler for POST /anthropic/v1/messages/count_tokens. */
export function createCountTokensHandler(opts: ChatCompletionsOptions): (req: Req, res: Res, scope?: RequestScope, given?: RequestAbort) => Promise<void> {
  return async (req, res, scope, given) => {
    // As for the other inference endpoints (createV1Handler).
    const abort = given ?? abortOnClose(res);
    try {
      const body = await readJsonBodyWithText(req, opts.maxBodyBytes);
      const counted: JsonObject = await opts.chat.countTokens({ body: validateCountTokensBody(body.json), rawBody: body.raw, headers: req.headers, signal: abort, ...(scope ? { scope } : {}) });
      sendJson(res, 200, counted);
    } catch (err) {
      if (err instanceof ClientClosedError || abort.aborted || res.destroyed) return;
      const error = asGatewayError(err);
      if (error.type === "gateway_internal") opts.logger.error({ ...scope?.trace?.ids(), err }, "count_tokens failed inside the gateway");
      const { status, body } = anthropicErrorBody(error);
      sendJson(res, status, body);
      if (status === 413) dropRefusedBody(req, res);
    }
  };
}
