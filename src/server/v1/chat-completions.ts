/**
 * POST /v1/chat/completions: reads and checks the JSON body, runs the chat service, and answers with a
 * chat.completion or an SSE stream of chunks ending in `data: [DONE]`. Errors use the OpenAI envelope
 * with the gateway's error_type vocabulary. A client that goes away aborts the
 * upstream request.
 *
 * The HTTP side every /v1 inference endpoint shares (body checks of the common fields, the error envelope,
 * JSON or SSE out, aborts) lives here too, as createV1Handler; /v1/responses is built on it.
 */
import { RequestAbort } from "../../cancellation.js";
import { GatewayError, httpStatusOf } from "../../errors.js";
import type { ChatRequest, ChunkStream, JsonObject } from "../../providers/types.js";
import type { RequestScope } from "../../services/context.js";
import { GuardrailBlockedError } from "../../guardrails/guardrail-blocked.js";
import { asGatewayError, type CallMethod, type ChatCall, type ChatOutcome, type ChatService, type MethodBody } from "../../inference/calls.js";
import type { Logger } from "../../telemetry/logger.js";
import { rawTextOf, wireTextOf } from "../../providers/raw-event.js";
import { dropRefusedBody } from "../refused-body.js";
import { ClientClosedError, readJsonBodyWithText } from "../rest/request-body.js";
import { NO_HEADERS, sendJson, sendJsonText, type Req, type Res } from "../node-http.js";
import { gone, SseWriter } from "./sse-writer.js";

/** What a /v1 inference handler needs. */
export interface ChatCompletionsOptions {
  chat: ChatService;
  maxBodyBytes: number;
  logger: Logger;
}

const ERROR_PREFIX = /^(caller|policy|provider|gateway)_/;

/** The error_type of an error: gateway types as they are; the body reader's own types become caller_*. */
function v1Type(err: GatewayError, status: number): string {
  if (ERROR_PREFIX.test(err.type)) return err.type;
  return status >= 500 ? `gateway_${err.type}` : `caller_${err.type}`;
}

/** `err` with the error_type a /v1 answer gives it (the body reader's own types become caller_* or gateway_*). */
export function v1Error(err: GatewayError): GatewayError {
  const status = httpStatusOf(err);
  const type = v1Type(err, status);
  if (type === err.type) return err;
  return new GatewayError(err.code, err.message, { type, httpStatus: status, ...(err.field !== undefined ? { field: err.field } : {}), cause: err });
}

/** The OpenAI error envelope of `err` and its status. */
export function v1ErrorBody(err: GatewayError): { status: number; body: JsonObject } {
  const status = httpStatusOf(err);
  if (err instanceof GuardrailBlockedError) return { status, body: { error: err.toJson() as JsonObject } };
  return {
    status,
    body: { error: { message: err.message, type: v1Type(err, status), param: err.field ?? null, code: err.code } },
  };
}

/** A 400 in the OpenAI envelope naming `field`. */
export function badRequest(message: string, field: string): GatewayError {
  return new GatewayError("invalid_argument", message, { type: "caller_invalid_request", httpStatus: 400, field });
}

/** The `model` every /v1 inference body requires: bare or `<provider>/<model>`. */
export function requireModel(body: JsonObject): string {
  const model = body["model"];
  if (typeof model !== "string" || model.trim() === "") {
    throw badRequest(`model is required: a string such as "gpt-4o-mini" or "openai/gpt-4o-mini"`, "model");
  }
  return model;
}

/** Checks the optional `stream` and `fallbacks` every /v1 inference body shares; true when it streams. */
export function checkStreamAndFallbacks(body: JsonObject): boolean {
  const stream = body["stream"];
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") throw badRequest("stream must be true or false", "stream");
  const fallbacks = body["fallbacks"];
  if (fallbacks !== undefined && fallbacks !== null && !(Array.isArray(fallbacks) && fallbacks.every((f) => typeof f === "string"))) {
    throw badRequest(`fallbacks must be a list of "<provider>/<model>" strings`, "fallbacks");
  }
  return stream === true;
}

/** Checks the fields the gateway reads; everything else passes through to the upstream unchanged. */
export function validateChatBody(body: JsonObject): ChatRequest {
  requireModel(body);
  const messages = body["messages"];
  if (!Array.isArray(messages) || messages.length === 0) {
    throw badRequest("messages is required: a non-empty list of {role, content} objects", "messages");
  }
  for (const [index, message] of messages.entries()) {
    if (message === null || typeof message !== "object" || Array.isArray(message) || typeof (message as JsonObject)["role"] !== "string") {
      throw badRequest(`messages[${index}] must be an object with a string role`, `messages[${index}]`);
    }
  }
  checkStreamAndFallbacks(body);
  // The checks above are all the type claims: the body itself goes on, not a copy of it.
  return body as ChatRequest;
}

/** How one stream goes out on the wire; a fresh one per stream, so a framing may count what it wrote. */
export interface SseFraming {
  /** One event as SSE text. */
  event(event: JsonObject): string;
  /** A failure after the headers went out (the OpenAI error envelope), as an event the OpenAI SDKs raise. */
  error(envelope: JsonObject): string;
  /** Written after the last event. */
  end: string;
  /**
   * True when event() writes a chunk that carries its upstream text in the form `data: <that text>\n\n`: a
   * batch's leading chunks marked with the text they arrived in together (wireTextOf) may then go out as it.
   */
  rawEvents?: boolean;
}

/** An error's status and the body that carries it on an endpoint's wire. */
export type ErrorEnvelope = (err: GatewayError) => { status: number; body: JsonObject };

/** One /v1 inference endpoint: how it checks its body and frames its stream. */
export interface V1Endpoint {
  /** Names the endpoint in log lines. */
  name: string;
  /** The inference API it serves. */
  method: CallMethod;
  /** Checks the fields the gateway reads; throws a GatewayError naming the field. */
  validate(body: JsonObject): MethodBody;
  /** The framing of one stream. */
  framing(): SseFraming;
  /** The error envelope of the endpoint's wire (the OpenAI one when absent). */
  errorBody?: ErrorEnvelope;
  /** Its framing writes a chunk out as the text it arrived as, reading no field (ChatCall.textChunks). */
  textChunks?: boolean;
}

const CHAT_FRAMING: SseFraming = {
  // An unchanged upstream chunk goes out as the text it came in: no second serialisation per chunk.
  event: (chunk) => `data: ${rawTextOf(chunk) ?? JSON.stringify(chunk)}\n\n`,
  error: (envelope) => `data: ${JSON.stringify(envelope)}\n\n`,
  end: "data: [DONE]\n\n",
  rawEvents: true,
};

const CHAT_ENDPOINT: V1Endpoint = {
  name: "chat completion",
  method: "chat",
  validate: (body) => ({ method: "chat", body: validateChatBody(body) }),
  framing: () => CHAT_FRAMING,
  textChunks: true,
};

async function writeStream(res: Res, chunks: ChunkStream, framing: SseFraming, errorBody: ErrorEnvelope, name: string, logger: Logger, headers: Record<string, string>): Promise<void> {
  res.writeHead(200, { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" });
  const writer = new SseWriter(res);
  try {
    if (chunks.batches !== undefined) {
      // An upstream read's events go out framed together: one async step per read, not per event.
      for await (const batch of chunks.batches()) {
        if (gone(res)) break;
        writer.write(framedBatch(batch, framing));
        const room = writer.room();
        if (room !== null) await room;
      }
    } else
      for await (const chunk of chunks) {
        if (gone(res)) break;
        writer.write(framing.event(chunk));
        const room = writer.room();
        if (room !== null) await room;
      }
  } catch (err) {
    if (gone(res)) return;
    const error = asGatewayError(err);
    if (error.type === "gateway_internal") logger.error({ err }, `${name} stream failed inside the gateway`);
    // Headers are out, so the status cannot change: the failure travels as an error event, which the
    // OpenAI SDKs raise as an API error.
    writer.end(framing.error(errorBody(error).body));
    return;
  }
  writer.end(framing.end);
}

/**
 * A batch's events as SSE text. Its leading chunks go out as the text they arrived as when the framing would
 * write them so and none has changed since: framed again, each event cost new strings and the joined text a
 * copy of the whole. When they are the whole batch and their upstream bytes are known, those go out instead:
 * text is encoded to UTF-8 again on its way to the socket.
 */
function framedBatch(batch: readonly JsonObject[], framing: SseFraming): string | Uint8Array {
  let text = "";
  let from = 0;
  const wire = framing.rawEvents === true ? wireTextOf(batch) : undefined;
  if (wire !== undefined && keepsRawText(batch, wire.count)) {
    if (wire.bytes !== undefined && wire.count === batch.length) return wire.bytes;
    text = wire.text;
    from = wire.count;
  }
  for (let index = from; index < batch.length; index++) text += framing.event(batch[index] as JsonObject);
  return text;
}

/** True when each of the batch's first `count` chunks still carries the text it arrived as (none changed since). */
function keepsRawText(batch: readonly JsonObject[], count: number): boolean {
  for (let index = 0; index < count; index++) if (rawTextOf(batch[index] as JsonObject) === undefined) return false;
  return true;
}

/** The headers that say how the answer was made: `x-gw-cache` when the cache was asked, `x-gw-guardrails` when a guardrail looked. */
function answerHeaders(outcome: ChatOutcome): Readonly<Record<string, string>> {
  if (outcome.cache === undefined && outcome.guardrails === undefined) return NO_HEADERS;
  const headers: Record<string, string> = {};
  if (outcome.cache !== undefined) headers["x-gw-cache"] = outcome.cache;
  if (outcome.guardrails !== undefined) headers["x-gw-guardrails"] = outcome.guardrails;
  return headers;
}

/** The headers of an error answer: the guardrails' verdicts of a block, the wait a rate limit asks for. */
function errorHeaders(error: GatewayError): Readonly<Record<string, string>> {
  if (error instanceof GuardrailBlockedError) return { "x-gw-guardrails": error.verdicts };
  if (error.retryAfterSeconds !== undefined) return { "retry-after": String(error.retryAfterSeconds) };
  return NO_HEADERS;
}

/** Why a request's work is cut short when its client leaves before the answer is out. */
export function clientLeft(): GatewayError {
  return new GatewayError("unavailable", "the client closed the request", { type: "caller_closed_request", httpStatus: 499 });
}

/** A request's cancellation, aborted when the response closes before it finished. */
export function abortOnClose(res: Res): RequestAbort {
  const abort = new RequestAbort();
  res.on("close", () => {
    if (!res.writableFinished) abort.abort(clientLeft());
  });
  return abort;
}

/**
 * Builds the handler of a /v1 inference endpoint: body checks, the service call, then JSON or SSE out. The
 * request is cut short through `given` when its client leaves (the HTTP layer aborts it, having a listener
 * on the response already); without one the handler watches the response itself.
 */
export function createV1Handler(opts: ChatCompletionsOptions, endpoint: V1Endpoint): (req: Req, res: Res, scope?: RequestScope, given?: RequestAbort) => Promise<void> {
  const errorBody = endpoint.errorBody ?? v1ErrorBody;
  return async (req, res, scope, given) => {
    const abort = given ?? abortOnClose(res);
    let json: JsonObject | undefined;
    // Errors before complete() are refusals of the handler's own; complete() counts what it throws itself.
    let running = false;
    try {
      const body = await readJsonBodyWithText(req, opts.maxBodyBytes);
      json = body.json;
      const call = endpoint.validate(json);
      running = true;
      // One literal of one shape: spreading `call` and the optional fields into it took V8's slow
      // property-definition path on every request. The cast joins `call`'s method and body, which
      // validate() returned together.
      const chatCall = { method: call.method, body: call.body, rawBody: body.raw, textChunks: endpoint.textChunks === true, headers: req.headers, url: req.url, signal: abort, scope } as ChatCall;
      const outcome = await opts.chat.complete(chatCall);
      // Tells the caller whether the response cache answered (hit-direct, hit-semantic) or stored (miss).
      const headers = answerHeaders(outcome);
      if (outcome.kind === "json") {
        if (outcome.raw !== undefined) sendJsonText(res, 200, outcome.raw, headers);
        else sendJson(res, 200, outcome.body, headers);
        return;
      }
      await writeStream(res, outcome.chunks, endpoint.framing(), errorBody, endpoint.name, opts.logger, headers);
    } catch (err) {
      // Nobody is left to answer a client that went away.
      if (err instanceof ClientClosedError || abort.aborted || gone(res)) return;
      const error = asGatewayError(err);
      if (error.type === "gateway_internal") opts.logger.error({ ...scope?.trace?.ids(), err }, `${endpoint.name} failed inside the gateway`);
      if (!running) opts.chat.refuse({ method: endpoint.method, model: json?.["model"], headers: req.headers, ...(scope ? { scope } : {}) }, v1Error(error));
      const { status, body } = errorBody(error);
      if (res.headersSent) res.end();
      else sendJson(res, status, body, errorHeaders(error));
      // A body over the limit is still on the wire, unread.
      if (status === 413) dropRefusedBody(req, res);
    }
  };
}

/** Builds the handler for POST /v1/chat/completions. */
export function createChatCompletionsHandler(opts: ChatCompletionsOptions): (req: Req, res: Res, scope?: RequestScope) => Promise<void> {
  return createV1Handler(opts, CHAT_ENDPOINT);
}
