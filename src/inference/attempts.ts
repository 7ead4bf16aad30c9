/**
 * The attempts: the targets in order (primary, then fallbacks). A target whose provider has a call limit
 * first takes one of its slots (waiting, or refused when the buffer is full and client.drop_excess_requests
 * is on). Within a target the keys are tried in their weighted order while the upstream answers with a
 * status that rotates keys; any other failure moves on to the next target. When every target fails the
 * primary's error is the answer.
 */
import { GatewayError } from "../errors.js";
import type { CallLimiter } from "../providers/call-limiter.js";
import { ProviderError } from "../providers/provider-error.js";
import { orderKeys, type KeyChoice } from "../routing/key-selection.js";
import { providerConfigOf } from "../routing/governance-router.js";
import { RoutingError } from "../routing/routing-error.js";
import { moveToFront } from "../routing/session-affinity.js";
import type { ProviderConfig, RouteTarget } from "../routing/types.js";
import { recordFailure, recordStreamOutcome, recordUsage } from "./accounting.js";
import { callAdapter, callOptions, providerOf, streamAdapter } from "./adapter-calls.js";
import { answerOutcome, failureOutcome, labels, usageOutcome } from "./attempt-labels.js";
import { asGatewayError, type ChatOutcome } from "./calls.js";
import type { Engine } from "./engine-deps.js";
import { primeStream } from "./primed-stream.js";
import { RelayedStream } from "./relayed-stream.js";
import type { InferenceRequest } from "./request-context.js";
import type { InferenceProvider } from "./state.js";

/** One target's attempt. */
interface TargetAttempt {
  target: RouteTarget;
  /** The virtual key's config for the target's provider; null without a key. */
  config: ProviderConfig | null;
  fallbackIndex: number;
  /** The caller's headers that go upstream; undefined when none does. */
  forwarded: Readonly<Record<string, string>> | undefined;
  /** The key a routing rule pinned for this target; "" lets key selection choose. */
  pinnedKeyId: string;
}

/** Walks the routed request's targets until one answers; throws the primary's error when none does. */
export async function attemptAll(engine: Engine, req: InferenceRequest): Promise<ChatOutcome> {
  const { call, virtualKey, route, method, custom, trace } = req;
  const decision = req.routed();
  const { primary, fallbacks } = decision;
  let primaryError: GatewayError | null = null;
  const forwarded = engine.forwarding.pick(call.headers);
  // Index loops: an entries() iterator and its [index, item] pairs would be made for every request.
  for (let fallbackIndex = 0; fallbackIndex <= fallbacks.length; fallbackIndex++) {
    const target = fallbackIndex === 0 ? primary : (fallbacks[fallbackIndex - 1] as RouteTarget);
    const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
    let targetError: GatewayError;
    try {
      const pinnedKeyId = fallbackIndex === 0 && decision.pinnedKeyId !== "" ? decision.pinnedKeyId : (target.keyId ?? "");
      return await attemptTarget(engine, req, { target, config, fallbackIndex, forwarded, pinnedKeyId });
    } catch (err) {
      if (call.signal.aborted) throw err;
      targetError = asGatewayError(err);
      const next = fallbacks[fallbackIndex];
      req.lastLabels ??= labels(virtualKey, route, { method, custom, target, choice: null, fallbackIndex, retried: false, trace });
      engine.observer.targetFailed(req.lastLabels, targetError, err, next);
      if (next !== undefined) req.retries++;
    }
    primaryError ??= targetError;
  }
  const error = primaryError ?? new GatewayError("internal", "no provider target was tried", { type: "gateway_internal", httpStatus: 500 });
  const base = req.lastLabels ?? labels(virtualKey, route, { method, custom, target: decision.primary, choice: null, fallbackIndex: 0, retried: false, trace });
  engine.observer.final(base, req.retries, error);
  throw error;
}

/**
 * One target's attempt. Not itself async: without a concurrency limit it hands back the keys' loop's own
 * promise, where an async function would wrap it in another (and a throw here reaches the caller's
 * try as a rejection would).
 */
function attemptTarget(engine: Engine, req: InferenceRequest, at: TargetAttempt): Promise<ChatOutcome> {
  // A failure before a key is chosen gets this target's labels in attemptAll; the keys' loop sets its own.
  req.lastLabels = null;
  const provider = providerOf(engine, at.target);
  const limiter = provider.limiter;
  if (limiter === null) return attemptKeys(engine, req, at, provider, null);
  return attemptLimited(engine, req, at, provider, limiter);
}

/** A target's attempt within its provider's concurrency limit. */
async function attemptLimited(engine: Engine, req: InferenceRequest, at: TargetAttempt, provider: InferenceProvider, limiter: CallLimiter): Promise<ChatOutcome> {
  const wait = limiter.acquire(req.call.signal, engine.settings.client.dropExcessRequests);
  if (wait !== null) await wait;
  let outcome: ChatOutcome;
  try {
    outcome = await attemptKeys(engine, req, at, provider, limiter);
  } catch (err) {
    limiter.release();
    throw err;
  }
  // A stream keeps its slot until it ends or its client leaves; its relay gives it back.
  if (outcome.kind === "json") limiter.release();
  return outcome;
}

/** The target's keys to try, in order: a pinned key alone, else the weighted order with the session's key first. */
function keyChoices(engine: Engine, req: InferenceRequest, at: TargetAttempt, provider: InferenceProvider): readonly KeyChoice[] {
  const { inference } = engine;
  const { target, config, pinnedKeyId } = at;
  const ordered = orderKeys({
    provider: target.provider,
    model: target.model,
    keys: provider.keys,
    config,
    catalog: inference.catalog,
    random: inference.random,
    // A key a routing rule pins is used whatever its health: the rule decides. Both always set (undefined when
    // off): spread-in optional properties took V8's slow property-definition path on every request.
    health: engine.settings.loadBalancer.routeSelectionEnabled && pinnedKeyId === "" ? inference.routeHealth : undefined,
    backoffs: pinnedKeyId === "" ? inference.keyBackoffs : undefined,
  });
  const choices = pinnedKeyId === "" ? reuseSessionKey(engine, ordered, req.sessionId, target.provider) : ordered.filter((choice) => choice.key.id === pinnedKeyId);
  if (choices.length === 0) {
    throw new RoutingError(
      "policy_keys_blocked",
      `routing rule "${req.route.rule?.name ?? ""}" pins key "${pinnedKeyId}" of provider "${target.provider}", which cannot serve model "${target.model}" for this request; fix the rule's key_id`,
    );
  }
  return choices;
}

/** The target's keys in their order, rotating on the statuses that call for another key. */
async function attemptKeys(engine: Engine, req: InferenceRequest, at: TargetAttempt, provider: InferenceProvider, limiter: CallLimiter | null): Promise<ChatOutcome> {
  const { inference, observer } = engine;
  const { call, method, virtualKey, route, custom, trace, started, sessionId, hold } = req;
  const { target, config, fallbackIndex, forwarded } = at;
  const choices = keyChoices(engine, req, at, provider);
  for (let index = 0; index < choices.length; index++) {
    const choice = choices[index] as KeyChoice;
    const base = labels(virtualKey, route, { method, custom, target, choice, fallbackIndex, retried: index > 0, trace });
    req.lastLabels = base;
    const span = trace?.attempt({
      operation: call.method === "embedding" ? "embeddings" : "chat",
      provider: target.provider,
      requestModel: choice.upstreamModel,
      keyId: choice.key.id,
      fallbackIndex,
      retryIndex: index,
      stream: call.body.stream === true,
      prompt: call.method === "responses" || call.method === "embedding" ? call.body.input : call.body.messages,
    });
    const options = callOptions(engine, call, provider, target.provider, choice, forwarded, span);
    observer.attemptStarted(base);
    const attemptStarted = performance.now();
    try {
      if (call.body.stream === true) {
        const opened = await streamAdapter(provider.adapter, call, choice.upstreamModel, options);
        const headersAt = performance.now();
        // While another key or a fallback could take over, the stream is answered once its first events
        // arrived, so a failure before them moves on; with none left it is answered at its headers, and
        // the caller's first byte comes as early as the upstream's.
        const rescuable = index + 1 < choices.length || fallbackIndex < req.routed().fallbacks.length;
        const stream = rescuable ? await primeStream(opened) : opened;
        // A stream's overhead is the gateway's share of the time to its response headers.
        observer.attemptSucceeded(base, (headersAt - attemptStarted) / 1000, (headersAt - started - req.upstreamMs - (headersAt - attemptStarted)) * 1000);
        const retries = req.retries;
        if (sessionId !== "") inference.affinity.remember(sessionId, target.provider, choice.key.id);
        const chunks = new RelayedStream(
          stream,
          (usage, err) => {
            limiter?.release();
            endActive(engine, req);
            const error = err === null ? null : asGatewayError(err);
            observer.final(base, retries, error);
            recordStreamOutcome(engine, target.provider, choice.key.id, performance.now() - attemptStarted, usage, err);
            recordUsage(engine, { virtualKey, config, hold }, base, choice.upstreamModel, usage);
            if (span !== undefined) {
              const outcome = usageOutcome(usage);
              if (error !== null) outcome.errorType = error.type;
              span.end(outcome);
            }
          },
          observer,
          base,
          started,
          span,
        );
        return { kind: "stream", chunks };
      }
      const result = await callAdapter(provider.adapter, call, choice.upstreamModel, options);
      const answeredAt = performance.now();
      observer.attemptSucceeded(base, (answeredAt - attemptStarted) / 1000, (answeredAt - started - req.upstreamMs - (answeredAt - attemptStarted)) * 1000);
      observer.final(base, req.retries, null);
      inference.routeHealth.recordSuccess(target.provider, choice.key.id, answeredAt - attemptStarted, result.usage?.output_tokens ?? 0);
      if (sessionId !== "") inference.affinity.remember(sessionId, target.provider, choice.key.id);
      recordUsage(engine, { virtualKey, config, hold }, base, choice.upstreamModel, result.usage);
      span?.end(usageOutcome(result.usage, answerOutcome(result.body)));
      return result.raw === undefined ? { kind: "json", body: result.body } : { kind: "json", body: result.body, raw: result.raw };
    } catch (err) {
      span?.end(failureOutcome(err));
      if (call.signal.aborted) throw err;
      const failedAfterMs = performance.now() - attemptStarted;
      req.upstreamMs += failedAfterMs;
      observer.attemptFailed(base, failedAfterMs / 1000, err instanceof ProviderError ? err.upstreamStatus : null);
      recordFailure(engine, target.provider, choice.key.id, err);
      if (err instanceof ProviderError && err.upstreamStatus === 429 && err.retryAfterMs !== null) inference.keyBackoffs.backOff(target.provider, choice.key.id, err.retryAfterMs);
      const next = choices[index + 1];
      if (err instanceof ProviderError && err.rotateKey && next !== undefined) {
        req.retries++;
        observer.keyRotated(base, String(err.upstreamStatus ?? err.errorType), err.upstreamStatus, next.key.id);
        continue;
      }
      throw err;
    }
  }
  // keyChoices never returns an empty list; this keeps the compiler and a future change honest.
  throw new GatewayError("internal", `no key of provider ${target.provider} was tried`, { type: "gateway_internal", httpStatus: 500 });
}

/** The key that last served the session first, while it is still among the keys to try. */
function reuseSessionKey(engine: Engine, ordered: readonly KeyChoice[], sessionId: string, provider: string): readonly KeyChoice[] {
  if (sessionId === "") return ordered;
  const last = engine.inference.affinity.get(sessionId);
  if (last === null || last.provider !== provider) return ordered;
  return moveToFront(ordered, (choice) => choice.key.id === last.keyId);
}

/** Marks the request active in the in-flight gauge. */
export function beginActive(engine: Engine, req: InferenceRequest): void {
  req.active = true;
  engine.observer.started(req.method, req.custom);
}

/** Ends the request's place in the in-flight gauge, once. */
export function endActive(engine: Engine, req: InferenceRequest): void {
  if (!req.active) return;
  req.active = false;
  engine.observer.ended(req.method, req.custom);
}
