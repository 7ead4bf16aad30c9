/**
 * Inference orchestration for chat completions and the Responses API, entirely in memory (the database is
 * never awaited here): resolve the caller's virtual key, route, then walk the targets (primary, then
 * fallbacks). A target whose provider has a call limit first takes one of its slots (waiting, or refused
 * when the buffer is full and client.drop_excess_requests is on). Within a target the keys are tried in
 * their weighted order while the upstream answers with a status that rotates keys; any other failure moves
 * on to the next target. When every target fails the primary's error is the answer. The caller's headers
 * that client.allowed_headers lets through go along on every upstream call. The call's method only picks
 * the adapter call and the `method` metric label, so routing, rotation, fallbacks and metrics are one code
 * path for both APIs.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import type { RequestAbort } from "../../cancellation.js";
import { GatewayError } from "../../errors.js";
import type { CallLimiter } from "../../providers/call-limiter.js";
import { ProviderError } from "../../providers/provider-error.js";
import type {
  CallOptions,
  ChatRequest,
  JsonObject,
  ProviderAdapter,
  ProviderResult,
  ProviderStream,
  ResponsesRequest,
  TokenUsage,
} from "../../providers/types.js";
import { providerConfigOf, routeRequest, type RoutingDecision } from "../../routing/governance-router.js";
import { orderKeys, type KeyChoice } from "../../routing/key-selection.js";
import { parseModelName } from "../../routing/model-name.js";
import { RoutingError } from "../../routing/routing-error.js";
import type { ProviderConfig, RouteTarget, VirtualKey } from "../../routing/types.js";
import type { InferenceObserver } from "../../telemetry/inference-observer.js";
import type { BaseLabels, CustomLabelValues, InferenceMethod, RoutingEngine } from "../../telemetry/metrics.js";
import type { AttemptOutcome, AttemptSpan, TraceNode } from "../../telemetry/tracing.js";
import type { RequestScope } from "../context.js";
import { credentialFromHeaders } from "./credential.js";
import { HeaderForwarding } from "./forwarded-headers.js";
import type { Inference, InferenceProvider } from "./state.js";

/** The inference APIs the service runs: chat completions, or the Responses API. */
export type CallMethod = "chat" | "responses";

/** A validated request body with its method; a call without a method is a chat completion. */
export type MethodBody =
  | {
      method?: "chat";
      /** The request JSON; `model` is a non-empty string and `messages` an array. */
      body: ChatRequest;
    }
  | {
      method: "responses";
      /** The request JSON; `model` is a non-empty string and `input` a string or an array. */
      body: ResponsesRequest;
    };

/** One validated request as a /v1 handler hands it over. */
export type ChatCall = MethodBody & {
  /** The body as the client sent it, when `body` is that JSON (validated, unchanged); forwarded as is when the upstream would get the same JSON. */
  rawBody?: string;
  headers: IncomingHttpHeaders;
  /** Aborted when the client goes away; aborts the upstream call. */
  signal: RequestAbort | AbortSignal;
  /** What the HTTP layer read from the request (dimension values, origin); none outside an HTTP request. */
  scope?: RequestScope;
};

/**
 * The answer: the complete JSON (a chat.completion or a response object), or the stream of events
 * (chat.completion.chunk objects, or Responses events each with a `type`).
 */
export type ChatOutcome =
  | {
      kind: "json";
      body: JsonObject;
      /** `body` exactly as the upstream serialised it, when it is forwarded unchanged: sent as is, never re-encoded. */
      raw?: string;
    }
  | { kind: "stream"; chunks: AsyncIterable<JsonObject> };

/** What the orchestration needs. */
export interface ChatDeps {
  inference: Inference;
  /** Hears every event of every request (telemetry's InferenceTelemetry records them). */
  observer: InferenceObserver;
  settings: RuntimeSettings;
}

/** What is known of a request refused before it could run: its body may be unreadable or invalid. */
export interface RefusedCall {
  method: CallMethod;
  /** The body's `model`, whatever its type; labels the refusal when it is a string. */
  model: unknown;
  headers: IncomingHttpHeaders;
  scope?: RequestScope;
}

/** The entry point of the /v1 inference handlers. */
export interface ChatService {
  /** Runs one request; throws RoutingError, ProviderError or GatewayError with the status to answer. */
  complete(call: ChatCall): Promise<ChatOutcome>;
  /** Counts a request refused before complete() ran it (a malformed body or header); `error.type` is the answer's error_type. */
  refuse(call: RefusedCall, error: GatewayError): void;
}

/** The credential the request carries, from the first header that has one; null when none. */
export function virtualKeyCredential(headers: IncomingHttpHeaders): string | null {
  return credentialFromHeaders((name) => {
    const raw = headers[name];
    return Array.isArray(raw) ? raw[0] : raw;
  });
}

/** The adapter's non-streaming call for the method, with the target's upstream model. */
function callAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderResult> {
  if (call.method === "responses") return adapter.responses({ ...call.body, model }, options);
  return adapter.chat({ ...call.body, model }, options);
}

/** The adapter's streaming call for the method, with the target's upstream model. */
function streamAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderStream> {
  if (call.method === "responses") return adapter.responsesStream({ ...call.body, model }, options);
  return adapter.chatStream({ ...call.body, model }, options);
}

/** Running facts of one request across its attempts. */
interface AttemptState {
  /** Key rotations plus fallback transitions so far. */
  retries: number;
  /** Labels of the latest attempt, for the final error. */
  lastLabels: BaseLabels | null;
  /** Milliseconds spent waiting on providers so far (every attempt), so overhead can exclude them. */
  upstreamMs: number;
}

/** One target's attempt context. */
interface TargetAttempt {
  method: InferenceMethod;
  virtualKey: VirtualKey | null;
  engines: readonly RoutingEngine[];
  target: RouteTarget;
  config: ProviderConfig | null;
  fallbackIndex: number;
  state: AttemptState;
  started: number;
  finishActive: () => void;
  /** The caller's headers that go upstream; undefined when none does. */
  forwarded: Readonly<Record<string, string>> | undefined;
}

/** Per-attempt facts for the base labels. */
interface Attempt {
  method: InferenceMethod;
  /** The request's dimension values for the custom labels. */
  custom: CustomLabelValues | undefined;
  target: RouteTarget;
  choice: KeyChoice | null;
  fallbackIndex: number;
  retried: boolean;
  /** The request's span when it is traced: its ids go on log lines. */
  trace?: TraceNode | undefined;
}

function labels(virtualKey: VirtualKey | null, engines: readonly RoutingEngine[], attempt: Attempt): BaseLabels {
  // "core" marks a fallback or retry transition (spec: routing_engine_used).
  const used = attempt.fallbackIndex > 0 || attempt.retried ? [...engines, "core" as const] : engines;
  return {
    provider: attempt.target.provider,
    model: attempt.target.model,
    method: attempt.method,
    alias: attempt.choice?.alias ?? "",
    virtualKeyId: virtualKey?.id ?? "",
    virtualKeyName: virtualKey?.name ?? "",
    routingEngineUsed: used,
    selectedKeyId: attempt.choice?.key.id ?? "",
    selectedKeyName: attempt.choice?.key.name ?? "",
    fallbackIndex: attempt.fallbackIndex,
    ...(attempt.custom ? { custom: attempt.custom } : {}),
    ...(attempt.trace ? { logIds: attempt.trace.ids() } : {}),
  };
}

/** The token counts of an attempt's span. */
function usageOutcome(usage: TokenUsage | null): Partial<AttemptOutcome> {
  if (usage === null) return {};
  return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens };
}

/** The response model, finish reasons and text of an answer, for its attempt's span. */
function answerOutcome(body: JsonObject): Partial<AttemptOutcome> {
  const out: Partial<AttemptOutcome> = { completion: body["choices"] ?? body["output"] };
  if (typeof body["model"] === "string") out.responseModel = body["model"];
  const choices = body["choices"];
  if (Array.isArray(choices)) {
    out.finishReasons = choices.flatMap((c) => (c !== null && typeof c === "object" && typeof (c as JsonObject)["finish_reason"] === "string" ? [(c as JsonObject)["finish_reason"] as string] : []));
  } else if (typeof body["status"] === "string") out.finishReasons = [body["status"]];
  return out;
}

/** How a failed attempt ends its span: the upstream status when there was one, and the error type. */
function failureOutcome(err: unknown): AttemptOutcome {
  if (err instanceof ProviderError) return { status: err.upstreamStatus, errorType: err.errorType };
  return { status: null, errorType: asGatewayError(err).type };
}

/** Any thrown value as a GatewayError (an unexpected one is our own fault: 500). */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError("internal", "internal error: the gateway log has the details", { type: "gateway_internal", httpStatus: 500, cause: err });
}

/** Creates the inference service (chat and responses) over the in-memory inference state. */
export function createChatService(deps: ChatDeps): ChatService {
  const { inference, observer } = deps;
  // Compiled once per settings change, not per request.
  let forwarding = new HeaderForwarding(deps.settings.client.allowedHeaders);
  deps.settings.onChange((settings) => {
    forwarding = new HeaderForwarding(settings.client.allowedHeaders);
  });

  function resolveKey(headers: IncomingHttpHeaders): VirtualKey | null {
    const key = inference.virtualKeys.resolve(virtualKeyCredential(headers));
    if (key === null && deps.settings.client.enforceGovernance) {
      throw new GatewayError("unauthenticated", "this gateway requires a virtual key on /v1 (client.enforce_governance); send it as x-gw-vk or Authorization: Bearer", {
        type: "caller_virtual_key_required",
        httpStatus: 401,
      });
    }
    return key;
  }

  /** Prices an answer's usage, reports it, and charges it to the virtual key's budgets and limits. */
  function recordUsage(
    virtualKey: VirtualKey | null,
    config: ProviderConfig | null,
    base: BaseLabels,
    upstreamModel: string,
    usage: TokenUsage | null,
  ): void {
    const input = usage?.input_tokens ?? 0;
    const output = usage?.output_tokens ?? 0;
    const mode = base.method === "responses" ? "responses" : "chat";
    const cost = inference.prices.cost({ provider: base.provider, upstreamModel, alias: base.alias || null, mode }, { input_tokens: input, output_tokens: output });
    observer.usage(base, upstreamModel, input, output, cost);
    if (virtualKey !== null && config !== null) inference.limits.record(virtualKey.id, config, { costUsd: cost ?? 0, tokens: input + output });
  }

  /**
   * Wraps a stream so usage and the final outcome are reported once it ends, fails or is abandoned:
   * exactly once, since onEnd also gives back the provider's call slot.
   */
  async function* relay(
    stream: ProviderStream,
    onEnd: (usage: TokenUsage | null, err: unknown) => void,
    base: BaseLabels,
    startedAt: number,
    span: AttemptSpan | undefined,
  ): AsyncGenerator<JsonObject> {
    let ended = false;
    let failure: unknown = null;
    let first = true;
    let last = startedAt;
    try {
      for await (const chunk of stream) {
        const now = performance.now();
        if (first) {
          observer.firstToken(base, (now - startedAt) / 1000);
          span?.firstToken();
        } else observer.chunk(base, (now - last) / 1000);
        first = false;
        last = now;
        yield chunk;
      }
      ended = true;
    } catch (err) {
      ended = true;
      failure = err;
      throw err;
    } finally {
      onEnd(stream.usage(), ended ? failure : new GatewayError("unavailable", "the client closed the stream", { type: "caller_closed_request", httpStatus: 499 }));
    }
  }

  async function complete(call: ChatCall): Promise<ChatOutcome> {
    const started = performance.now();
    const method: InferenceMethod = call.method ?? "chat";
    const custom = call.scope?.dims.metricValues;
    const rawFallbacks = call.body["fallbacks"];
    const fallbacks = Array.isArray(rawFallbacks) ? rawFallbacks.filter((f): f is string => typeof f === "string") : undefined;
    let virtualKey: VirtualKey | null = null;
    let decision: RoutingDecision;
    try {
      virtualKey = resolveKey(call.headers);
      decision = routeRequest(
        { model: call.body.model, ...(fallbacks ? { fallbacks } : {}), virtualKey },
        { catalog: inference.catalog, limits: inference.limits, random: inference.random },
      );
    } catch (err) {
      const error = asGatewayError(err);
      observer.refused(refusalLabels(method, custom, call.body.model, virtualKey), error);
      throw error;
    }

    const trace = call.scope?.trace;
    if (trace !== undefined) {
      if (virtualKey !== null) trace.virtualKey(virtualKey.id, virtualKey.name);
      trace.route({ provider: decision.primary.provider, model: decision.primary.model, fallbacks: decision.fallbacks.length, engines: decision.enginesUsed });
    }
    observer.started(method, custom);
    let activeDone = false;
    const finishActive = (): void => {
      if (activeDone) return;
      activeDone = true;
      observer.ended(method, custom);
    };
    try {
      const outcome = await attemptAll(call, method, virtualKey, decision, started, finishActive);
      if (outcome.kind === "json") finishActive();
      return outcome;
    } catch (err) {
      finishActive();
      throw err;
    }
  }

  function refusalLabels(method: InferenceMethod, custom: CustomLabelValues | undefined, model: string, virtualKey: VirtualKey | null): BaseLabels {
    let target: RouteTarget = { provider: "", model };
    try {
      const parsed = parseModelName(model, (name) => inference.catalog.isProvider(name));
      target = { provider: parsed.provider ?? "", model: parsed.model };
    } catch {
      // A malformed model keeps its raw text in the label.
    }
    return labels(virtualKey, [], { method, custom, target, choice: null, fallbackIndex: 0, retried: false });
  }

  async function attemptAll(
    call: ChatCall,
    method: InferenceMethod,
    virtualKey: VirtualKey | null,
    decision: RoutingDecision,
    started: number,
    finishActive: () => void,
  ): Promise<ChatOutcome> {
    const engines = decision.enginesUsed;
    const custom = call.scope?.dims.metricValues;
    const targets = [decision.primary, ...decision.fallbacks];
    let primaryError: GatewayError | null = null;
    const state: AttemptState = { retries: 0, lastLabels: null, upstreamMs: 0 };
    const forwarded = forwarding.pick(call.headers);
    for (const [fallbackIndex, target] of targets.entries()) {
      const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
      let targetError: GatewayError;
      try {
        return await attemptTarget(call, { method, virtualKey, engines, target, config, fallbackIndex, state, started, finishActive, forwarded });
      } catch (err) {
        if (call.signal.aborted) throw err;
        targetError = asGatewayError(err);
        const next = targets[fallbackIndex + 1];
        observer.targetFailed(state.lastLabels ?? labels(virtualKey, engines, { method, custom, target, choice: null, fallbackIndex, retried: false, trace: call.scope?.trace }), targetError, err, next);
        if (next !== undefined) state.retries++;
      }
      primaryError ??= targetError;
    }
    const error = primaryError ?? new GatewayError("internal", "no provider target was tried", { type: "gateway_internal", httpStatus: 500 });
    const base = state.lastLabels ?? labels(virtualKey, engines, { method, custom, target: decision.primary, choice: null, fallbackIndex: 0, retried: false, trace: call.scope?.trace });
    observer.final(base, state.retries, error);
    throw error;
  }

  async function attemptTarget(call: ChatCall, at: TargetAttempt): Promise<ChatOutcome> {
    const { method, virtualKey, engines, target, fallbackIndex, state } = at;
    const provider = inference.providers.get(target.provider);
    state.lastLabels = labels(virtualKey, engines, { method, custom: call.scope?.dims.metricValues, target, choice: null, fallbackIndex, retried: false, trace: call.scope?.trace });
    if (provider === undefined) {
      throw new RoutingError(
        "caller_provider_not_configured",
        `provider "${target.provider}" is not configured on this gateway; add it under providers or pick another provider`,
        "model",
      );
    }
    const limiter = provider.limiter;
    if (limiter === null) return attemptKeys(call, at, provider, null);
    const wait = limiter.acquire(call.signal, deps.settings.client.dropExcessRequests);
    if (wait !== null) await wait;
    let outcome: ChatOutcome;
    try {
      outcome = await attemptKeys(call, at, provider, limiter);
    } catch (err) {
      limiter.release();
      throw err;
    }
    // A stream keeps its slot until it ends or its client leaves; its relay gives it back.
    if (outcome.kind === "json") limiter.release();
    return outcome;
  }

  /** The target's keys in their weighted order, rotating on the statuses that call for another key. */
  async function attemptKeys(call: ChatCall, at: TargetAttempt, provider: InferenceProvider, limiter: CallLimiter | null): Promise<ChatOutcome> {
    const { method, virtualKey, engines, target, config, fallbackIndex, state, started, finishActive, forwarded } = at;
    const custom = call.scope?.dims.metricValues;
    const choices = orderKeys({
      provider: target.provider,
      model: target.model,
      keys: provider.keys,
      config,
      catalog: inference.catalog,
      random: inference.random,
    });
    for (const [index, choice] of choices.entries()) {
      const base = labels(virtualKey, engines, { method, custom, target, choice, fallbackIndex, retried: index > 0, trace: call.scope?.trace });
      state.lastLabels = base;
      // Routing hands back the same key objects it was given; the lookup recovers the secret-bearing type.
      const key = provider.keys.find((candidate) => candidate.id === choice.key.id);
      if (key === undefined) throw new GatewayError("internal", `key ${choice.key.id} of ${target.provider} vanished`, { type: "gateway_internal", httpStatus: 500 });
      const options: CallOptions = { key, signal: call.signal };
      if (forwarded !== undefined) options.headers = forwarded;
      // The client's own bytes may go upstream only when the model is not rewritten.
      if (call.rawBody !== undefined && call.rawBody !== "" && choice.upstreamModel === call.body.model) options.rawBody = call.rawBody;
      const timeoutMs = provider.timeoutMs ?? inference.upstreamTimeoutMs;
      if (timeoutMs !== undefined) options.timeoutMs = timeoutMs;
      const span = call.scope?.trace?.attempt({
        operation: "chat",
        provider: target.provider,
        requestModel: choice.upstreamModel,
        keyId: choice.key.id,
        fallbackIndex,
        retryIndex: index,
        stream: call.body.stream === true,
        prompt: call.method === "responses" ? call.body.input : call.body.messages,
      });
      // The upstream continues the caller's trace under this attempt's span.
      if (span !== undefined) options.headers = { ...forwarded, traceparent: span.traceparent() };
      observer.attemptStarted(base);
      const attemptStarted = performance.now();
      try {
        if (call.body.stream === true) {
          const stream = await streamAdapter(provider.adapter, call, choice.upstreamModel, options);
          const headersAt = performance.now();
          // A stream's overhead is the gateway's share of the time to its response headers.
          observer.attemptSucceeded(base, (headersAt - attemptStarted) / 1000, (headersAt - started - state.upstreamMs - (headersAt - attemptStarted)) * 1000);
          const retries = state.retries;
          const chunks = relay(
            stream,
            (usage, err) => {
              limiter?.release();
              finishActive();
              const error = err === null ? null : asGatewayError(err);
              observer.final(base, retries, error);
              recordUsage(virtualKey, config, base, choice.upstreamModel, usage);
              span?.end({ status: 200, ...usageOutcome(usage), ...(error !== null ? { errorType: error.type } : {}) });
            },
            base,
            started,
            span,
          );
          return { kind: "stream", chunks };
        }
        const result = await callAdapter(provider.adapter, call, choice.upstreamModel, options);
        const answeredAt = performance.now();
        observer.attemptSucceeded(base, (answeredAt - attemptStarted) / 1000, (answeredAt - started - state.upstreamMs - (answeredAt - attemptStarted)) * 1000);
        observer.final(base, state.retries, null);
        recordUsage(virtualKey, config, base, choice.upstreamModel, result.usage);
        span?.end({ status: 200, ...usageOutcome(result.usage), ...answerOutcome(result.body) });
        return result.raw === undefined ? { kind: "json", body: result.body } : { kind: "json", body: result.body, raw: result.raw };
      } catch (err) {
        span?.end(failureOutcome(err));
        if (call.signal.aborted) throw err;
        const failedAfterMs = performance.now() - attemptStarted;
        state.upstreamMs += failedAfterMs;
        observer.attemptFailed(base, failedAfterMs / 1000, err instanceof ProviderError ? err.upstreamStatus : null);
        const next = choices[index + 1];
        if (err instanceof ProviderError && err.rotateKey && next !== undefined) {
          state.retries++;
          observer.keyRotated(base, String(err.upstreamStatus ?? err.errorType), err.upstreamStatus, next.key.id);
          continue;
        }
        throw err;
      }
    }
    // orderKeys never returns an empty list; this keeps the compiler and a future change honest.
    throw new GatewayError("internal", `no key of provider ${target.provider} was tried`, { type: "gateway_internal", httpStatus: 500 });
  }

  function refuse(call: RefusedCall, error: GatewayError): void {
    const virtualKey = inference.virtualKeys.resolve(virtualKeyCredential(call.headers));
    const model = typeof call.model === "string" ? call.model : "";
    observer.refused(refusalLabels(call.method, call.scope?.dims.metricValues, model, virtualKey), error);
  }

  return { complete, refuse };
}
