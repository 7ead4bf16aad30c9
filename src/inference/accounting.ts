/**
 * Accounting: what an answer cost (priced from its usage), charged to the virtual key's budgets and limits
 * and reported; and what each attempt says about its route's health.
 */
import { ProviderError } from "../providers/provider-error.js";
import type { TokenUsage } from "../providers/types.js";
import { rotatesKey } from "../routing/key-selection.js";
import type { LimitHold } from "../routing/limit-gate.js";
import type { ProviderConfig, VirtualKey } from "../routing/types.js";
import type { BaseLabels } from "../telemetry/metrics.js";
import type { Engine } from "./engine-deps.js";

/** Prices an answer's usage, reports it, and charges it to the virtual key's budgets and limits. */
export function recordUsage(
  engine: Engine,
  charged: { virtualKey: VirtualKey | null; config: ProviderConfig | null; hold: LimitHold | null },
  base: BaseLabels,
  upstreamModel: string,
  usage: TokenUsage | null,
): void {
  const { inference } = engine;
  const { virtualKey, config, hold } = charged;
  const input = usage?.input_tokens ?? 0;
  const output = usage?.output_tokens ?? 0;
  const mode = base.method === "responses" || base.method === "embedding" ? base.method : "chat";
  const cost = inference.prices.cost({ provider: base.provider, upstreamModel, alias: base.alias || null, mode }, { input_tokens: input, output_tokens: output });
  engine.observer.usage(base, upstreamModel, input, output, cost);
  if (virtualKey !== null && config !== null) inference.limits.record(virtualKey.id, config, { costUsd: cost ?? 0, tokens: input + output });
  if (hold !== null) inference.gate.settle(hold, cost ?? 0, input + output, virtualKey !== null && config !== null ? { virtualKeyId: virtualKey.id, config } : null);
  else if (virtualKey !== null) inference.hierarchy.charge(virtualKey, cost ?? 0, input + output);
}

/** Feeds a failed attempt to the route statistics when it says something about the route, not the caller. */
export function recordFailure(engine: Engine, provider: string, keyId: string, err: unknown): void {
  if (!(err instanceof ProviderError)) return;
  const status = err.upstreamStatus;
  if (status !== null && status < 500 && !rotatesKey(status)) return;
  engine.inference.routeHealth.recordFailure(provider, keyId, status === 429);
}

/** Feeds a finished stream to the route statistics; a client that left says nothing about the route. */
export function recordStreamOutcome(engine: Engine, provider: string, keyId: string, latencyMs: number, usage: TokenUsage | null, err: unknown): void {
  if (err === null) engine.inference.routeHealth.recordSuccess(provider, keyId, latencyMs, usage?.output_tokens ?? 0);
  else recordFailure(engine, provider, keyId, err);
}
