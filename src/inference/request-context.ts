/**
 * The one object a request's stages share: what the call asked for, what each stage decided (the caller's
 * virtual key, the route, the cache plan, the room reserved in the key's limits) and the running facts of
 * its attempts. Every field is set in the constructor so every request has the same shape.
 */
import type { RoutingDecision } from "../routing/governance-router.js";
import type { ComplexityResult } from "../routing/complexity.js";
import type { VerdictEntry } from "../guardrails/guardrail-run.js";
import { KEYLESS_PLAN, type KeyPlan } from "./key-plans.js";
import type { LevelOwner } from "../routing/hierarchy.js";
import type { LimitHold } from "../routing/limit-gate.js";
import type { VirtualKey } from "../routing/types.js";
import type { BaseLabels, CustomLabelValues, InferenceMethod, RoutingEngine } from "../telemetry/metrics.js";
import type { TraceNode } from "../telemetry/tracing.js";
import { sessionIdOf, type ChatCall } from "./calls.js";
import { NO_CACHE_HEADERS, type CacheRequestHeaders } from "./cache-settings-wire.js";
import type { CacheHit, CachePlan } from "./response-cache.js";

/** What routing decided that the labels of every attempt carry. */
export interface RouteInfo {
  engines: readonly RoutingEngine[];
  rule: { id: string; name: string } | null;
  team: LevelOwner | null;
  customer: LevelOwner | null;
  /** The request's complexity tier, when a rule in scope read it. */
  complexity: ComplexityResult | null;
}

/** The route of a request refused before routing. */
export const NO_ROUTE: RouteInfo = { engines: [], rule: null, team: null, customer: null, complexity: null };

/** The `method` label of a call: the Messages API is a chat API. */
export function metricMethod(method: ChatCall["method"]): InferenceMethod {
  return method === "messages" || method === undefined ? "chat" : method;
}

/** One request on its way through the engine's stages. */
export class InferenceRequest {
  /** The call; the input guardrails replace it when they redact its body. */
  call: ChatCall;
  /** performance.now() when the engine took the request. */
  readonly started: number;
  readonly method: InferenceMethod;
  /** The request's dimension values for the custom metric labels. */
  readonly custom: CustomLabelValues | undefined;
  /** The request's span when it is traced. */
  readonly trace: TraceNode | undefined;
  /** x-gw-session-id (or the MCP session header); "" when it sent none. */
  readonly sessionId: string;
  /** The caller's virtual key (admission); null without one. */
  virtualKey: VirtualKey | null = null;
  /** What the key's requests share: its team, customer and scoping subject (admission). */
  keyPlan: KeyPlan = KEYLESS_PLAN;
  /** The complexity tier, when a routing rule in scope reads it (route plan). */
  complexity: ComplexityResult | null = null;
  /** The targets to try (route plan); null until routed. */
  decision: RoutingDecision | null = null;
  /** What routing decided that every attempt's labels carry; NO_ROUTE until routed. */
  route: RouteInfo = NO_ROUTE;
  /** Its x-gw-cache and x-gw-cache-ttl headers, read first. */
  cacheHeaders: CacheRequestHeaders = NO_CACHE_HEADERS;
  /** What the response cache does for the request (cache); null when caching is off for it. */
  plan: CachePlan | null = null;
  /** The answer the cache holds in memory for it, found before any reservation. */
  remembered: CacheHit | null = null;
  /** The room reserved in the key's budgets and rate limits (limits); null without a virtual key. */
  hold: LimitHold | null = null;
  /** Key rotations plus fallback transitions so far. */
  retries = 0;
  /** Labels of the latest attempt, for the final error. */
  lastLabels: BaseLabels | null = null;
  /** Milliseconds spent waiting on providers so far (every attempt), so overhead can exclude them. */
  upstreamMs = 0;
  /** Whether the request still counts as active in the in-flight gauge. */
  active = false;
  /** What each guardrail that looked at the request or its answer concluded. */
  readonly guardrailVerdicts: VerdictEntry[] = [];

  constructor(call: ChatCall, started: number) {
    this.call = call;
    this.started = started;
    this.method = metricMethod(call.method);
    this.custom = call.scope?.dims.metricValues;
    this.trace = call.scope?.trace;
    this.sessionId = sessionIdOf(call.headers);
  }

  /** The route decision; only stages after the route plan call it. */
  routed(): RoutingDecision {
    if (this.decision === null) throw new Error("the request has not been routed");
    return this.decision;
  }
}
