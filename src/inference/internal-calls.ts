/**
 * The gateway's own calls through the engine (a guardrail's judge asking its model): what such a call may
 * ask that a request from outside never can, and the judge's way to its model built on it.
 *
 * The options ride on the call under a module-private symbol: a request's JSON or headers cannot carry a
 * symbol key, and the /v1 handlers build their ChatCall field by field, so only internalCall() sets them.
 */
import { RequestAbort, type AbortSource } from "../cancellation.js";
import { GatewayError } from "../errors.js";
import type { JudgeModel } from "../guardrails/call-out.js";
import type { ChatCall, ChatService } from "./calls.js";

const INTERNAL = Symbol("gw.internalCall");

/** What one of the gateway's own calls asks of the engine. */
export interface InternalCallOptions {
  /** Runs no guardrail stage (input or output) on the call: its content is the gateway's own. */
  readonly skipGuardrails: boolean;
}

/** A call carrying the options. */
type InternalCall = ChatCall & { readonly [INTERNAL]?: InternalCallOptions };

/** `call` as one of the gateway's own, with `options`. */
export function internalCall(call: ChatCall, options: InternalCallOptions): ChatCall {
  const marked: InternalCall = { ...call, [INTERNAL]: options };
  return marked;
}

/** The options of one of the gateway's own calls; undefined for every request from outside. */
export function internalOptionsOf(call: ChatCall): InternalCallOptions | undefined {
  return (call as InternalCall)[INTERNAL];
}

/** The source as the engine's call takes it: a RequestAbort or AbortSignal as it is, anything else followed by a RequestAbort. */
function callSignal(source: AbortSource): RequestAbort | AbortSignal {
  if (source instanceof RequestAbort || source instanceof AbortSignal) return source;
  const own = new RequestAbort();
  if (source.aborted) own.abort(source.reason);
  else source.addEventListener("abort", () => own.abort(source.reason), { once: true });
  return own;
}

/**
 * The judge checks' way to their models: a chat completion through `chat` (the engine's single-call
 * service, not agent mode, which would offer the judge MCP tools), without a virtual key and without the
 * guardrail stages. No virtual key means no key's budget, limits or routing config apply, and
 * client.enforce_governance does not refuse it: `virtualKey: null` tells admission the caller is known to
 * have none, where a request from outside without one would be refused.
 */
export function routedJudge(chat: ChatService): JudgeModel {
  return async (request, signal) => {
    const call: ChatCall = { body: request, headers: {}, signal: callSignal(signal), virtualKey: null };
    const outcome = await chat.complete(internalCall(call, { skipGuardrails: true }));
    if (outcome.kind === "json") return outcome.body;
    // The body asks for no stream, so this does not happen; were it to, the stream is closed, not left holding its upstream.
    await outcome.chunks[Symbol.asyncIterator]().return?.();
    throw new GatewayError("internal", "the judge model answered a stream to a request for one JSON answer", { type: "gateway_internal", httpStatus: 500 });
  };
}
