/**
 * Adaptive load balancing's per-node memory: for each provider and each (provider, key) route, a
 * time-decayed error rate, an EWMA of latency per output token, rate-limit hits and consecutive failures,
 * and the route's health state. Outcomes are recorded synchronously (no I/O); weights are recomputed at
 * most every 5 s, lazily on the next read, so selection only multiplies by a cached factor.
 *
 * States: healthy -> degraded (error rate above 2% over at least 20 requests, or latency per token above
 * 3x the median of its siblings) -> failed (error rate above 5% over at least 20 requests, a rate-limit
 * hit, or 5 consecutive failures: weight 0) -> recovering after a cool-down of 15 s (doubled, up to 5 min,
 * each time a recovering route fails again) -> healthy after 5 consecutive successes. A recovering route
 * starts at a quarter of its weight and regains 90% of its penalty within 30 s.
 */
import type { Clock } from "./types.js";

/** A route's health state. */
export type RouteState = "healthy" | "degraded" | "failed" | "recovering";

/** Every state, in the order the `gw_route_state` gauge lists them. */
export const ROUTE_STATES: readonly RouteState[] = ["healthy", "degraded", "failed", "recovering"];

/** Weight recompute period. */
export const RECOMPUTE_MS = 5_000;
/** Half-life of the decayed error rate. */
export const ERROR_HALF_LIFE_MS = 30_000;
/** First cool-down of a failed route. */
export const BASE_COOLDOWN_MS = 15_000;
/** Longest cool-down. */
export const MAX_COOLDOWN_MS = 300_000;
/** Consecutive successes that bring a recovering route back to healthy. */
export const RECOVERY_SUCCESSES = 5;
/** Consecutive failures that open a route's circuit. */
export const FAILURE_STREAK = 5;
/** Share of its weight a recovering route starts with (its probe share and floor). */
export const PROBE_SHARE = 0.25;
/** Time constant of the recovery ramp: exp(-30 s / 13 s) < 0.1, so 90% of the penalty is gone within 30 s. */
const RECOVERY_TAU_MS = 13_000;
/** Fewest (decayed) requests before an error rate or latency can change a state. */
const MIN_REQUESTS = 20;
const DEGRADED_ERROR_RATE = 0.02;
const FAILED_ERROR_RATE = 0.05;
const LATENCY_FACTOR = 3;
/** EWMA smoothing of latency per output token. */
const LATENCY_ALPHA = 0.2;

/** Why a route changed state, for the INFO log line. */
export interface RouteChange {
  provider: string;
  /** "" for a provider route. */
  keyId: string;
  from: RouteState;
  to: RouteState;
  reason: string;
}

/** One route's statistics and state. */
export class RouteStats {
  state: RouteState = "healthy";
  /** Multiplier of the configured weight, refreshed at each recompute and on every state change. */
  factor = 1;
  /** Decayed counts; errors / total is the error rate. */
  decayedErrors = 0;
  decayedTotal = 0;
  /** Milliseconds per output token (EWMA); 0 until a success reported tokens. */
  latencyPerToken = 0;
  requests = 0;
  rateLimitHits = 0;
  consecutiveFailures = 0;
  consecutiveSuccesses = 0;
  lastChangeAt: number;
  cooldownMs = BASE_COOLDOWN_MS;
  #decayedAt: number;

  constructor(
    readonly provider: string,
    readonly keyId: string,
    now: number,
  ) {
    this.lastChangeAt = now;
    this.#decayedAt = now;
  }

  /** The decayed error rate at `now`. */
  errorRate(now: number): number {
    this.decay(now);
    return this.decayedTotal === 0 ? 0 : this.decayedErrors / this.decayedTotal;
  }

  /** Ages the decayed counts to `now`. */
  decay(now: number): void {
    const elapsed = now - this.#decayedAt;
    if (elapsed <= 0) return;
    const keep = Math.pow(0.5, elapsed / ERROR_HALF_LIFE_MS);
    this.decayedErrors *= keep;
    this.decayedTotal *= keep;
    this.#decayedAt = now;
  }

  resetCounts(): void {
    this.decayedErrors = 0;
    this.decayedTotal = 0;
    this.consecutiveFailures = 0;
    this.consecutiveSuccesses = 0;
  }
}

/** The statistics of every route this node has served, and their states. */
export class RouteHealth {
  readonly #clock: Clock;
  readonly #onChange: (change: RouteChange) => void;
  /** provider -> its provider route and its key routes. */
  readonly #providers = new Map<string, { route: RouteStats; keys: Map<string, RouteStats> }>();
  #recomputedAt: number;

  constructor(options: { clock?: Clock; onChange?: (change: RouteChange) => void } = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#onChange = options.onChange ?? (() => {});
    this.#recomputedAt = this.#clock();
  }

  #entry(provider: string): { route: RouteStats; keys: Map<string, RouteStats> } {
    let entry = this.#providers.get(provider);
    if (entry === undefined) {
      entry = { route: new RouteStats(provider, "", this.#clock()), keys: new Map() };
      this.#providers.set(provider, entry);
    }
    return entry;
  }

  #keyRoute(provider: string, keyId: string): RouteStats {
    const entry = this.#entry(provider);
    let route = entry.keys.get(keyId);
    if (route === undefined) {
      route = new RouteStats(provider, keyId, this.#clock());
      entry.keys.set(keyId, route);
    }
    return route;
  }

  /** Records a successful attempt through a key; `outputTokens` 0 leaves the latency average alone. */
  recordSuccess(provider: string, keyId: string, latencyMs: number, outputTokens: number): void {
    const now = this.#clock();
    const entry = this.#entry(provider);
    this.#success(entry.route, now, latencyMs, outputTokens);
    this.#success(this.#keyRoute(provider, keyId), now, latencyMs, outputTokens);
  }

  /** Records a failed attempt through a key; `rateLimited` marks a 429 (or a token-rate refusal). */
  recordFailure(provider: string, keyId: string, rateLimited: boolean): void {
    const now = this.#clock();
    const entry = this.#entry(provider);
    this.#failure(entry.route, now, rateLimited);
    this.#failure(this.#keyRoute(provider, keyId), now, rateLimited);
  }

  #success(route: RouteStats, now: number, latencyMs: number, outputTokens: number): void {
    route.decay(now);
    route.decayedTotal += 1;
    route.requests++;
    route.consecutiveFailures = 0;
    route.consecutiveSuccesses++;
    if (outputTokens > 0) {
      const perToken = latencyMs / outputTokens;
      route.latencyPerToken = route.latencyPerToken === 0 ? perToken : route.latencyPerToken + LATENCY_ALPHA * (perToken - route.latencyPerToken);
    }
    if (route.state === "recovering" && route.consecutiveSuccesses >= RECOVERY_SUCCESSES) {
      route.cooldownMs = BASE_COOLDOWN_MS;
      this.#change(route, "healthy", now, `${RECOVERY_SUCCESSES} consecutive successes while recovering`);
    }
  }

  #failure(route: RouteStats, now: number, rateLimited: boolean): void {
    route.decay(now);
    route.decayedTotal += 1;
    route.decayedErrors += 1;
    route.requests++;
    route.consecutiveSuccesses = 0;
    route.consecutiveFailures++;
    if (rateLimited) route.rateLimitHits++;
    if (route.state === "failed") return;
    if (route.state === "recovering") {
      route.cooldownMs = Math.min(route.cooldownMs * 2, MAX_COOLDOWN_MS);
      this.#change(route, "failed", now, `a failure while recovering; cool-down ${route.cooldownMs / 1000} s`);
      return;
    }
    const reason = rateLimited
      ? "the upstream rate-limited it"
      : route.consecutiveFailures >= FAILURE_STREAK
        ? `${route.consecutiveFailures} consecutive failures`
        : route.decayedTotal >= MIN_REQUESTS && route.errorRate(now) > FAILED_ERROR_RATE
          ? `error rate ${(route.errorRate(now) * 100).toFixed(1)}% above 5%`
          : null;
    if (reason !== null) this.#change(route, "failed", now, reason);
  }

  #change(route: RouteStats, to: RouteState, now: number, reason: string): void {
    const from = route.state;
    if (from === to) return;
    route.state = to;
    route.lastChangeAt = now;
    if (to === "recovering" || to === "healthy") route.resetCounts();
    route.factor = this.#factor(route, now, 1);
    this.#onChange({ provider: route.provider, keyId: route.keyId, from, to, reason });
  }

  /** Recomputes states and weights when 5 s have passed since the last recompute. */
  refresh(): void {
    const now = this.#clock();
    if (now - this.#recomputedAt < RECOMPUTE_MS) return;
    this.#recomputedAt = now;
    const providerLatencies: number[] = [];
    for (const entry of this.#providers.values()) {
      if (entry.route.latencyPerToken > 0) providerLatencies.push(entry.route.latencyPerToken);
    }
    const providerMedian = median(providerLatencies);
    for (const entry of this.#providers.values()) {
      this.#recompute(entry.route, now, providerMedian);
      const keyLatencies: number[] = [];
      for (const key of entry.keys.values()) if (key.latencyPerToken > 0) keyLatencies.push(key.latencyPerToken);
      const keyMedian = median(keyLatencies);
      for (const key of entry.keys.values()) this.#recompute(key, now, keyMedian);
    }
  }

  #recompute(route: RouteStats, now: number, medianLatency: number): void {
    const rate = route.errorRate(now);
    const enough = route.decayedTotal >= MIN_REQUESTS;
    const slow = enough && medianLatency > 0 && route.latencyPerToken > LATENCY_FACTOR * medianLatency;
    if (route.state === "failed") {
      if (now - route.lastChangeAt >= route.cooldownMs) this.#change(route, "recovering", now, `cool-down of ${route.cooldownMs / 1000} s over`);
    } else if (route.state === "healthy") {
      if (enough && rate > DEGRADED_ERROR_RATE) this.#change(route, "degraded", now, `error rate ${(rate * 100).toFixed(1)}% above 2%`);
      else if (slow) this.#change(route, "degraded", now, `latency per token above ${LATENCY_FACTOR}x the median`);
    } else if (route.state === "degraded") {
      if (!(enough && rate > DEGRADED_ERROR_RATE) && !slow) this.#change(route, "healthy", now, "error rate and latency back to normal");
    }
    route.factor = this.#factor(route, now, slow && medianLatency > 0 ? medianLatency / route.latencyPerToken : 1);
  }

  /** The multiplier of a route's configured weight. */
  #factor(route: RouteStats, now: number, latencyShare: number): number {
    switch (route.state) {
      case "failed":
        return 0;
      case "recovering": {
        const ramp = 1 - (1 - PROBE_SHARE) * Math.exp(-(now - route.lastChangeAt) / RECOVERY_TAU_MS);
        return Math.max(PROBE_SHARE, ramp);
      }
      case "degraded":
        return Math.max(0.1, Math.min(1 - 10 * route.errorRate(now), latencyShare));
      default:
        return 1;
    }
  }

  /** The weight factor of a key route (1 for a route never seen). */
  keyFactor(provider: string, keyId: string): number {
    return this.#providers.get(provider)?.keys.get(keyId)?.factor ?? 1;
  }

  /** The weight factor of a provider route (1 for a route never seen). */
  providerFactor(provider: string): number {
    return this.#providers.get(provider)?.route.factor ?? 1;
  }

  /** The state of a provider route (healthy for a route never seen). */
  providerState(provider: string): RouteState {
    return this.#providers.get(provider)?.route.state ?? "healthy";
  }

  /** The state of a key route (healthy for a route never seen). */
  keyState(provider: string, keyId: string): RouteState {
    return this.#providers.get(provider)?.keys.get(keyId)?.state ?? "healthy";
  }

  /** The time on this balancer's clock. */
  now(): number {
    return this.#clock();
  }

  /** Every route: each provider followed by its keys. */
  *routes(): IterableIterator<RouteStats> {
    for (const entry of this.#providers.values()) {
      yield entry.route;
      yield* entry.keys.values();
    }
  }

  /** Forgets a provider's routes (the provider was removed). */
  forget(provider: string): void {
    this.#providers.delete(provider);
  }
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? (values[mid] as number) : ((values[mid - 1] as number) + (values[mid] as number)) / 2;
}
