/**
 * Chat completions orchestration, entirely in memory (the database is never awaited here): resolve the
 * caller's virtual key, route, then walk the targets (primary, then fallbacks). Within a target the keys
 * are tried in their weighted order while the upstream answers with a status that rotates keys; any other
 * failure moves on to the next target. When every target fails the primary's error is the answer.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError } from "../../errors.js";
import { ProviderError } from "../../providers/provider-error.js";
import type { CallOptions, ChatRequest, JsonObject, ProviderStream, TokenUsage } from "../../providers/types.js";
import { providerConfigOf, routeRequest, type RoutingDecision } from "../../routing/governance-router.js";
import { orderKeys, type KeyChoice } from "../../routing/key-selection.js";
import { parseModelName } from "../../routing/model-name.js";
import { RoutingError } from "../../routing/routing-error.js";
import type { ProviderConfig, RouteTarget, VirtualKey } from "../../routing/types.js";
import type { Logger } from "../../telemetry/logger.js";
import type { BaseLabels, InferenceErrorType, Metrics, RoutingEngine } from "../../telemetry/metrics.js";
import type { Inference } from "./config.js";

/** One validated chat request as the /v1 handler hands it over. */
export interface ChatCall {
  /** The request JSON; `model` is a non-empty string and `messages` an array. */
  body: ChatRequest;
  headers: IncomingHttpHeaders;
  /** Aborted when the client goes away; aborts the upstream call. */
  signal: AbortSignal;
}

/** The answer: a complete chat.completion, or a stream of chat.completion.chunk objects. */
export type ChatOutcome = { kind: "json"; body: JsonObject } | { kind: "stream"; chunks: AsyncIterable<JsonObject> };

/** What the orchestration needs. */
export interface ChatDeps {
  inference: Inference;
  metrics: Metrics;
  settings: RuntimeSettings;
  logger: Logger;
}

/** The chat completions entry point of the /v1 handler. */
export interface ChatService {
  /** Runs one request; throws RoutingError, ProviderError or GatewayError with the status to answer. */
  complete(call: ChatCall): Promise<ChatOutcome>;
}

/** Headers a virtual key may arrive in, in precedence order (DESIGN.md section 8). */
const KEY_HEADERS = ["x-gw-vk", "authorization", "x-api-key", "x-goog-api-key"] as const;

function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const raw = headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === "") return null;
  if (name !== "authorization") return value.trim();
  const match = /^Bearer\s+(.+)$/i.exec(value.trim());
  return match?.[1]?.trim() ?? null;
}

/** The credential the request carries, from the first header that has one; null when none. */
export function virtualKeyCredential(headers: IncomingHttpHeaders): string | null {
  for (const name of KEY_HEADERS) {
    const value = headerValue(headers, name);
    if (value !== null) return value;
  }
  return null;
}

/** Running facts of one request across its attempts. */
interface AttemptState {
  /** Key rotations plus fallback transitions so far. */
  retries: number;
  /** Labels of the latest attempt, for the final error. */
  lastLabels: BaseLabels | null;
}

/** One target's attempt context. */
interface TargetAttempt {
  virtualKey: VirtualKey | null;
  engines: readonly RoutingEngine[];
  target: RouteTarget;
  config: ProviderConfig | null;
  fallbackIndex: number;
  state: AttemptState;
  started: number;
  finishActive: () => void;
}

/** Per-attempt facts for the base labels. */
interface Attempt {
  target: RouteTarget;
  choice: KeyChoice | null;
  fallbackIndex: number;
  retried: boolean;
}

function labels(virtualKey: VirtualKey | null, engines: readonly RoutingEngine[], attempt: Attempt): BaseLabels {
  // "core" marks a fallback or retry transition (spec: routing_engine_used).
  const used = attempt.fallbackIndex > 0 || attempt.retried ? [...engines, "core" as const] : engines;
  return {
    provider: attempt.target.provider,
    model: attempt.target.model,
    method: "chat",
    alias: attempt.choice?.alias ?? "",
    virtualKeyId: virtualKey?.id ?? "",
    virtualKeyName: virtualKey?.name ?? "",
    routingEngineUsed: used,
    selectedKeyId: attempt.choice?.key.id ?? "",
    selectedKeyName: attempt.choice?.key.name ?? "",
    fallbackIndex: attempt.fallbackIndex,
  };
}

function errorStatus(err: GatewayError): number {
  return err.httpStatus ?? 500;
}

function errorType(err: GatewayError): InferenceErrorType {
  return /^(caller|policy|provider|gateway)_/.test(err.type) ? (err.type as InferenceErrorType) : "gateway_internal";
}

/** Any thrown value as a GatewayError (an unexpected one is our own fault: 500). */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError("internal", "internal error: the gateway log has the details", { type: "gateway_internal", httpStatus: 500, cause: err });
}

/** Creates the chat service over the in-memory inference state. */
export function createChatService(deps: ChatDeps): ChatService {
  const { inference, metrics } = deps;

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

  function recordUsage(virtualKey: VirtualKey | null, config: ProviderConfig | null, base: BaseLabels, usage: TokenUsage | null): void {
    const input = usage?.input_tokens ?? 0;
    const output = usage?.output_tokens ?? 0;
    metrics.recordTokens(base, input, output);
    // Cost is 0 until the model catalog's pricing lands; budgets therefore only move with that issue.
    if (virtualKey !== null && config !== null) inference.limits.record(virtualKey.id, config, { costUsd: 0, tokens: input + output });
  }

  function finishWithError(base: BaseLabels, err: GatewayError, retries: number): void {
    metrics.recordUpstreamRequest(base);
    metrics.recordError(base, errorStatus(err), errorType(err));
    metrics.recordRetries(base, retries);
  }

  function aborted(signal: AbortSignal): boolean {
    return signal.aborted;
  }

  /** Wraps a stream so usage and the final metrics are recorded once it ends, fails or is abandoned. */
  async function* relay(
    stream: ProviderStream,
    onEnd: (usage: TokenUsage | null, err: unknown) => void,
    base: BaseLabels,
    startedAt: number,
  ): AsyncGenerator<JsonObject> {
    let ended = false;
    let first = true;
    let last = startedAt;
    try {
      for await (const chunk of stream) {
        const now = performance.now();
        if (first) metrics.recordFirstToken(base, (now - startedAt) / 1000);
        else metrics.recordInterToken(base, (now - last) / 1000);
        first = false;
        last = now;
        yield chunk;
      }
      ended = true;
      onEnd(stream.usage(), null);
    } catch (err) {
      ended = true;
      onEnd(stream.usage(), err);
      throw err;
    } finally {
      if (!ended) onEnd(stream.usage(), new GatewayError("unavailable", "the client closed the stream", { type: "caller_closed_request", httpStatus: 499 }));
    }
  }

  async function complete(call: ChatCall): Promise<ChatOutcome> {
    const started = performance.now();
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
      finishWithError(refusalLabels(call.body.model, virtualKey), error, 0);
      throw error;
    }

    metrics.activeRequestStarted("chat");
    let activeDone = false;
    const finishActive = (): void => {
      if (activeDone) return;
      activeDone = true;
      metrics.activeRequestFinished("chat");
    };
    try {
      const outcome = await attemptAll(call, virtualKey, decision, started, finishActive);
      if (outcome.kind === "json") finishActive();
      return outcome;
    } catch (err) {
      finishActive();
      throw err;
    }
  }

  function refusalLabels(model: string, virtualKey: VirtualKey | null): BaseLabels {
    let target: RouteTarget = { provider: "", model };
    try {
      const parsed = parseModelName(model, (name) => inference.catalog.isProvider(name));
      target = { provider: parsed.provider ?? "", model: parsed.model };
    } catch {
      // A malformed model keeps its raw text in the label.
    }
    return labels(virtualKey, [], { target, choice: null, fallbackIndex: 0, retried: false });
  }

  async function attemptAll(
    call: ChatCall,
    virtualKey: VirtualKey | null,
    decision: RoutingDecision,
    started: number,
    finishActive: () => void,
  ): Promise<ChatOutcome> {
    const engines = decision.enginesUsed;
    const targets = [decision.primary, ...decision.fallbacks];
    let primaryError: GatewayError | null = null;
    const state: AttemptState = { retries: 0, lastLabels: null };
    for (const [fallbackIndex, target] of targets.entries()) {
      const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
      let targetError: GatewayError;
      try {
        return await attemptTarget(call, { virtualKey, engines, target, config, fallbackIndex, state, started, finishActive });
      } catch (err) {
        if (aborted(call.signal)) throw err;
        targetError = asGatewayError(err);
        if (targetError.type === "gateway_internal") {
          deps.logger.error({ err, provider: target.provider }, "chat completion failed inside the gateway");
        }
      }
      primaryError ??= targetError;
      if (fallbackIndex < targets.length - 1) {
        state.retries++;
        deps.logger.info({ provider: target.provider, model: target.model, error_type: targetError.type, next: targets[fallbackIndex + 1] }, "falling back to the next provider");
      }
    }
    const error = primaryError ?? new GatewayError("internal", "no provider target was tried", { type: "gateway_internal", httpStatus: 500 });
    const base = state.lastLabels ?? labels(virtualKey, engines, { target: decision.primary, choice: null, fallbackIndex: 0, retried: false });
    finishWithError(base, error, state.retries);
    throw error;
  }

  async function attemptTarget(call: ChatCall, at: TargetAttempt): Promise<ChatOutcome> {
    const { virtualKey, engines, target, config, fallbackIndex, state, started, finishActive } = at;
    const provider = inference.providers.get(target.provider);
    state.lastLabels = labels(virtualKey, engines, { target, choice: null, fallbackIndex, retried: false });
    if (provider === undefined) {
      throw new RoutingError(
        "caller_provider_not_configured",
        `provider "${target.provider}" is not configured on this gateway; add it under providers or pick another provider`,
        "model",
      );
    }
    const choices = orderKeys({
      provider: target.provider,
      model: target.model,
      keys: provider.keys,
      config,
      catalog: inference.catalog,
      random: inference.random,
    });
    for (const [index, choice] of choices.entries()) {
      const base = labels(virtualKey, engines, { target, choice, fallbackIndex, retried: index > 0 });
      state.lastLabels = base;
      const request: ChatRequest = { ...call.body, model: choice.upstreamModel };
      // Routing hands back the same key objects it was given; the lookup recovers the secret-bearing type.
      const key = provider.keys.find((candidate) => candidate.id === choice.key.id);
      if (key === undefined) throw new GatewayError("internal", `key ${choice.key.id} of ${target.provider} vanished`, { type: "gateway_internal", httpStatus: 500 });
      const options: CallOptions = { key, signal: call.signal };
      if (inference.upstreamTimeoutMs !== undefined) options.timeoutMs = inference.upstreamTimeoutMs;
      const attemptStarted = performance.now();
      try {
        if (call.body.stream === true) {
          const stream = await provider.adapter.chatStream(request, options);
          metrics.recordUpstreamLatency(base, (performance.now() - attemptStarted) / 1000, true);
          metrics.setProviderKeyUp(target.provider, choice.key.id, choice.key.name, true);
          const retries = state.retries;
          const chunks = relay(
            stream,
            (usage, err) => {
              finishActive();
              if (err === null) {
                metrics.recordUpstreamRequest(base);
                metrics.recordSuccess(base);
                metrics.recordRetries(base, retries);
              } else {
                finishWithError(base, asGatewayError(err), retries);
              }
              recordUsage(virtualKey, config, base, usage);
            },
            base,
            started,
          );
          return { kind: "stream", chunks };
        }
        const result = await provider.adapter.chat(request, options);
        metrics.recordUpstreamLatency(base, (performance.now() - attemptStarted) / 1000, true);
        metrics.setProviderKeyUp(target.provider, choice.key.id, choice.key.name, true);
        metrics.recordUpstreamRequest(base);
        metrics.recordSuccess(base);
        metrics.recordRetries(base, state.retries);
        recordUsage(virtualKey, config, base, result.usage);
        return { kind: "json", body: result.body };
      } catch (err) {
        if (aborted(call.signal)) throw err;
        metrics.recordUpstreamLatency(base, (performance.now() - attemptStarted) / 1000, false);
        if (err instanceof ProviderError && err.upstreamStatus !== null) {
          metrics.setProviderKeyUp(target.provider, choice.key.id, choice.key.name, false);
        }
        const next = choices[index + 1];
        if (err instanceof ProviderError && err.rotateKey && next !== undefined) {
          state.retries++;
          metrics.recordKeyRotation({
            provider: target.provider,
            requestedModel: target.model,
            keyId: choice.key.id,
            keyName: choice.key.name,
            failReason: String(err.upstreamStatus ?? err.errorType),
          });
          deps.logger.info({ provider: target.provider, key_id: choice.key.id, next_key_id: next.key.id, status: err.upstreamStatus }, "rotating to the next provider key");
          continue;
        }
        throw err;
      }
    }
    // orderKeys never returns an empty list; this keeps the compiler and a future change honest.
    throw new GatewayError("internal", `no key of provider ${target.provider} was tried`, { type: "gateway_internal", httpStatus: 500 });
  }

  return { complete };
}
