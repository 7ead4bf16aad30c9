/**
 * The inference engine for chat completions, the Responses API, Anthropic's Messages API and embeddings,
 * entirely in memory (the database is never awaited here). A request runs through the stages in order, each
 * once, over one InferenceRequest:
 *
 *   admission (virtual key, hierarchy) -> input guardrails -> route plan (complexity, rules, governance, balancing, affinity)
 *   -> cache plan -> limits (reservation) -> cache lookup -> attempts (targets, keys) -> accounting
 *   -> output guardrails
 *
 * with telemetry hearing each step through the observer. The call's method only picks the adapter call and
 * the `method` metric label (Messages counts as chat), so every API shares one path.
 */
import { GatewayError } from "../errors.js";
import { estimateInputTokens } from "../providers/messages-bridge/count.js";
import type { JsonObject } from "../providers/types.js";
import { orderKeys } from "../routing/key-selection.js";
import { providerConfigOf, routeRequest } from "../routing/governance-router.js";
import { parseModelName } from "../routing/model-name.js";
import type { RouteTarget } from "../routing/types.js";
import type { BaseLabels, CustomLabelValues, InferenceMethod } from "../telemetry/metrics.js";
import { admit, resolveKey } from "./admission.js";
import { callOptions, providerOf } from "./adapter-calls.js";
import { failureOutcome, labels } from "./attempt-labels.js";
import { attemptAll, beginActive, endActive } from "./attempts.js";
import { hitOutcome, keepAnswer, lookUpCache, planCache, readCacheHeaders } from "./cache-stage.js";
import { asGatewayError, virtualKeyCredential, type ChatCall, type ChatOutcome, type ChatService, type CountTokensCall, type RefusedCall } from "./calls.js";
import { engineOf, type ChatDeps, type Engine } from "./engine-deps.js";
import { InferenceRequest, metricMethod, NO_ROUTE } from "./request-context.js";
import { releaseUnspent, reserve } from "./reservation.js";
import { classify, planRoute } from "./route-plan.js";
import { guardInput, guardOutput } from "./guardrail-stage.js";
import type { VirtualKey } from "../routing/types.js";

/** Creates the inference service (chat, responses, messages and embeddings) over the in-memory inference state. */
export function createChatService(deps: ChatDeps): ChatService {
  const engine = engineOf(deps);
  return {
    complete: (call) => complete(engine, call),
    countTokens: (call) => countTokens(engine, call),
    refuse: (call, error) => refuse(engine, call, error),
  };
}

/** Runs one request through the stages. */
async function complete(engine: Engine, call: ChatCall): Promise<ChatOutcome> {
  const req = new InferenceRequest(call, performance.now());
  try {
    readCacheHeaders(req);
    admit(engine, req);
    // Awaited only when an input guardrail calls out to a service: the in-process checks answer at once.
    const guarding = guardInput(engine, req);
    if (guarding !== undefined) await guarding;
    // Awaited only when a rule needs a tier: most requests need none, and an await is a turn of the microtask queue.
    const classifying = classify(engine, req);
    req.complexity = classifying instanceof Promise ? await classifying : classifying;
    planRoute(engine, req);
    planCache(engine, req);
    engine.observer.routed(Date.now(), engine.routingLogRecords.recordOf(call.body.model, req.routed(), req.virtualKey), req.trace);
    const reserving = reserve(engine, req);
    if (reserving !== undefined) await reserving;
  } catch (err) {
    const error = asGatewayError(err);
    engine.observer.refused(refusalLabels(engine, req.method, req.custom, call.body.model, req.virtualKey), error);
    throw error;
  }
  traceRoute(req);
  // Awaited only when the key's cache is asked: without a cache the lookup answers null at once.
  const looking = lookUpCache(engine, req);
  const hit = looking instanceof Promise ? await looking : looking;
  if (hit !== null) {
    // A hit calls no provider and spends nothing: only the hit itself is counted.
    const cacheType = hit.status === "hit-direct" ? "direct" : "semantic";
    req.trace?.routeCacheHit(cacheType);
    engine.observer.cacheHit(labels(req.virtualKey, req.route, { method: req.method, custom: req.custom, target: req.routed().primary, choice: null, fallbackIndex: 0, retried: false, trace: req.trace }), cacheType);
    releaseUnspent(engine, req);
    return guardOutput(engine, req, hitOutcome(hit));
  }
  beginActive(engine, req);
  let outcome: ChatOutcome;
  try {
    outcome = await attemptAll(engine, req);
    if (outcome.kind === "json") endActive(engine, req);
  } catch (err) {
    endActive(engine, req);
    // No upstream answered: the request spends nothing beyond its count.
    releaseUnspent(engine, req);
    throw err;
  }
  // Cached as the upstream answered: the output guardrails run on every answer, a replayed one too.
  return guardOutput(engine, req, keepAnswer(engine, req, outcome));
}

/** Puts the caller's key and the route on the request's span. */
function traceRoute(req: InferenceRequest): void {
  const { trace, virtualKey } = req;
  if (trace === undefined) return;
  const decision = req.routed();
  if (virtualKey !== null) trace.virtualKey(virtualKey.id, virtualKey.name);
  trace.route({ provider: decision.primary.provider, model: decision.primary.model, fallbacks: decision.fallbacks.length, engines: decision.enginesUsed });
}

/** The labels of a request refused before any attempt: its model as sent, split into provider and model when it parses. */
function refusalLabels(engine: Engine, method: InferenceMethod, custom: CustomLabelValues | undefined, model: string, virtualKey: VirtualKey | null): BaseLabels {
  let target: RouteTarget = { provider: "", model };
  try {
    const parsed = parseModelName(model, (name) => engine.inference.catalog.isProvider(name));
    target = { provider: parsed.provider ?? "", model: parsed.model };
  } catch {
    // A malformed model keeps its raw text in the label.
  }
  return labels(virtualKey, NO_ROUTE, { method, custom, target, choice: null, fallbackIndex: 0, retried: false });
}

/**
 * Counts a Messages request's input tokens under the same key and routing as a request: the routed provider
 * counts when it can (Anthropic), else the gateway estimates. No budget is charged.
 */
async function countTokens(engine: Engine, call: CountTokensCall): Promise<JsonObject> {
  const { inference } = engine;
  const virtualKey = resolveKey(engine, call.headers);
  const decision = routeRequest({ model: call.body.model, virtualKey }, { catalog: inference.catalog, limits: inference.limits, random: inference.random });
  const target = decision.primary;
  const trace = call.scope?.trace;
  if (trace !== undefined) {
    if (virtualKey !== null) trace.virtualKey(virtualKey.id, virtualKey.name);
    trace.route({ provider: target.provider, model: target.model, fallbacks: decision.fallbacks.length, engines: decision.enginesUsed });
  }
  const provider = providerOf(engine, target);
  const count = provider.adapter.countTokens;
  if (count === undefined) return estimateInputTokens({ ...call.body, model: target.model });
  const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
  const [choice] = orderKeys({ provider: target.provider, model: target.model, keys: provider.keys, config, catalog: inference.catalog, random: inference.random });
  if (choice === undefined) throw new GatewayError("internal", `no key of provider ${target.provider} to count tokens with`, { type: "gateway_internal", httpStatus: 500 });
  const span = trace?.attempt({
    operation: "chat",
    provider: target.provider,
    requestModel: choice.upstreamModel,
    keyId: choice.key.id,
    fallbackIndex: 0,
    retryIndex: 0,
    stream: false,
    prompt: call.body.messages,
  });
  const options = callOptions(engine, call, provider, target.provider, choice, engine.forwarding.pick(call.headers), span);
  try {
    const counted = await count.call(provider.adapter, { ...call.body, model: choice.upstreamModel }, options);
    const inputTokens = counted["input_tokens"];
    span?.end({ status: 200, ...(typeof inputTokens === "number" ? { inputTokens } : {}) });
    return counted;
  } catch (err) {
    span?.end(failureOutcome(err));
    throw err;
  }
}

/** Counts a request refused before complete() ran it. */
function refuse(engine: Engine, call: RefusedCall, error: GatewayError): void {
  const virtualKey = engine.inference.virtualKeys.resolve(virtualKeyCredential(call.headers, engine.idp));
  const model = typeof call.model === "string" ? call.model : "";
  engine.observer.refused(refusalLabels(engine, metricMethod(call.method), call.scope?.dims.metricValues, model, virtualKey), error);
}
