/**
 * The route plan: the complexity tier when a routing rule in scope reads it, the routing rules and the
 * virtual key's provider configs (governance), then adaptive load balancing and session affinity. Each
 * optional step is skipped outright when nothing configures it.
 */
import { balanceDirections } from "../routing/adaptive-directions.js";
import type { ComplexityResult } from "../routing/complexity.js";
import { providerConfigOf, routeRequest, type RoutingDecision, type RoutingRequest, type RulesInput } from "../routing/governance-router.js";
import { parseModelName } from "../routing/model-name.js";
import type { RuleSubject } from "../routing/routing-rules.js";
import { moveToFront } from "../routing/session-affinity.js";
import type { RouteTarget, VirtualKey } from "../routing/types.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceRequest } from "./request-context.js";
import { ruleVariables, sentHeaderNames } from "./rule-variables.js";

/**
 * The request's complexity tier when a routing rule in scope reads `complexity_tier` (null otherwise, and
 * then nothing is computed); `skipped` when `routing.complexity` is not configured.
 */
export function classify(engine: Engine, req: InferenceRequest): Promise<ComplexityResult> | ComplexityResult | null {
  const rules = engine.inference.routingRules;
  if (rules.isEmpty || !rules.needsComplexity(req.keyPlan.subject)) return null;
  if (engine.complexity === undefined) return { tier: "", mechanism: "skipped" };
  return engine.complexity.classify(req.call.body, req.sessionId, req.call.signal);
}

/** Routes the request: sets its decision and the route every attempt's labels carry. */
export function planRoute(engine: Engine, req: InferenceRequest): void {
  const { call, virtualKey } = req;
  const { inference } = engine;
  const { keyPlan } = req;
  const rawFallbacks = call.body["fallbacks"];
  const request: RoutingRequest = { model: call.body.model, virtualKey, integration: call.method === "messages" ? "anthropic" : null };
  if (Array.isArray(rawFallbacks)) request.fallbacks = rawFallbacks.filter((f): f is string => typeof f === "string");
  if (!inference.routingRules.isEmpty) request.rules = rulesOf(engine, req, keyPlan.subject);
  let decision = routeRequest(request, { catalog: inference.catalog, limits: inference.limits, random: inference.random });
  decision = withAffinity(engine, balance(engine, decision, virtualKey), req.sessionId, call.body.model);
  req.decision = decision;
  req.route = { engines: decision.enginesUsed, rule: decision.rule, team: keyPlan.team, customer: keyPlan.customer, complexity: req.complexity };
}

function rulesOf(engine: Engine, req: InferenceRequest, subject: RuleSubject): RulesInput {
  const { call, method, virtualKey, complexity } = req;
  let sent: ReadonlySet<string> | null = null;
  return {
    set: engine.inference.routingRules,
    subject,
    vars: (provider, model) => ruleVariables(call, method, virtualKey, provider, model, engine.inference, complexity?.tier ?? ""),
    // The names as the `headers` variable has them: lowercase, sent with a value.
    headerNames: () => (sent ??= sentHeaderNames(call.headers)),
    onError: ({ rule, error }) => engine.observer.ruleFailed(rule.id, rule.name, error, req.trace),
  };
}

/** Level 1 of adaptive load balancing over governance's decision; the `loadbalancing` engine is added when it changed the primary. */
function balance(engine: Engine, decision: RoutingDecision, virtualKey: VirtualKey | null): RoutingDecision {
  const { inference } = engine;
  const configured = virtualKey !== null && virtualKey.providerConfigs.length > 0;
  // A catalog-resolved request asks for the bare model; each provider then gets its own id for it.
  const model = decision.catalog?.model ?? decision.primary.model;
  const result = balanceDirections({
    primary: decision.primary,
    fallbacks: decision.fallbacks,
    pinned: !decision.enginesUsed.includes("model-catalog"),
    candidates: () => inference.catalog.providersOf(model),
    allowed: (provider) => !configured || providerConfigOf(virtualKey, provider) !== null,
    health: inference.routeHealth,
    toggles: engine.settings.loadBalancer,
    random: inference.random,
  });
  if (!result.changed) return decision;
  const moved = result.primary !== decision.primary;
  const idOf = (target: RouteTarget): RouteTarget =>
    decision.catalog === undefined || target.model !== decision.primary.model ? target : { provider: target.provider, model: inference.catalog.idAt(target.provider, model) };
  return {
    ...decision,
    primary: idOf(result.primary),
    fallbacks: result.fallbacks.map(idOf),
    enginesUsed: moved ? [...decision.enginesUsed, "loadbalancing"] : decision.enginesUsed,
    // A key pinned by a rule belongs to the rule's provider.
    pinnedKeyId: moved ? "" : decision.pinnedKeyId,
  };
}

/** Session affinity: the provider that last served the session goes first, unless the request names its provider. */
function withAffinity(engine: Engine, decision: RoutingDecision, sessionId: string, model: string): RoutingDecision {
  if (sessionId === "") return decision;
  const { inference } = engine;
  const last = inference.affinity.get(sessionId);
  if (last === null || last.provider === decision.primary.provider) return decision;
  if (parseModelName(model, (name) => inference.catalog.isProvider(name)).provider !== null) return decision;
  const targets = moveToFront([decision.primary, ...decision.fallbacks], (target) => target.provider === last.provider);
  const [primary, ...fallbacks] = targets;
  if (primary === undefined || primary === decision.primary) return decision;
  return { ...decision, primary, fallbacks, pinnedKeyId: "" };
}
