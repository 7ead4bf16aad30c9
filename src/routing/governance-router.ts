/**
 * Provider routing for one top-level request, without the adaptive load balancer (docs/governance.md):
 * governance when a virtual key is present, otherwise an explicit prefix or the model catalog's first
 * candidate. The result names the primary target and the ordered fallbacks; key selection happens per
 * attempt in key-selection.ts.
 */
import { configAllowsModel } from "./allowed-models.js";
import type { CatalogCandidate, ModelCatalog } from "./model-catalog.js";
import { formatTarget, parseModelName, type ParsedModel } from "./model-name.js";
import { RoutingError } from "./routing-error.js";
import type { RuleMatch } from "./routing-rules.js";
import type { LimitExceeded } from "./usage-limits.js";
import { keepWhere } from "./keep-where.js";
import { weightedIndex } from "./weighted-random.js";
import type { RuleVariables } from "./cel-expression.js";
import type { RoutingRuleSet, RuleEvaluationError, RuleSubject } from "./routing-rules.js";
import type { ProviderConfig, Random, RouteTarget, RoutingEngine, VirtualKey } from "./types.js";

/** What routing needs from a /v1 request. */
export interface RoutingRequest {
  /** `model` or `provider/model`. */
  model: string;
  /** Optional `provider/model` entries to try after the primary, in order. */
  fallbacks?: readonly string[];
  /** The caller's virtual key, already looked up; null when the request carries none. */
  virtualKey: VirtualKey | null;
  /** Routing rules to evaluate first, with the request's variables built on demand. */
  rules?: RulesInput;
  /** The canonical provider of the integration route the request came through (`anthropic` for /anthropic), or null. */
  integration?: string | null;
}

/** The routing rules of a request: the set, the variables (built only when a rule is in scope), the error sink. */
export interface RulesInput {
  set: RoutingRuleSet;
  subject: RuleSubject;
  vars: (provider: string, model: string) => RuleVariables;
  /** The (lowercase) names of the headers the request sent: the rules' guards look at them before any variable is built. */
  headerNames: () => ReadonlySet<string>;
  /** Hears conditions that failed to evaluate (they count as no match). */
  onError: (failure: RuleEvaluationError) => void;
}

/** Reads the current budget and rate-limit state (UsageLimits implements it). */
export interface LimitState {
  exceeded(virtualKeyId: string, config: ProviderConfig): LimitExceeded | null;
}

/** Collaborators of routing, injected so tests control the catalog, the counters and the dice. */
export interface RoutingContext {
  catalog: ModelCatalog;
  limits: LimitState;
  random: Random;
}

/** Where a request goes. */
export interface RoutingDecision {
  primary: RouteTarget;
  /** Targets to walk in order when the primary fails. */
  fallbacks: RouteTarget[];
  /** Values for the `routing_engine_used` label; empty when the caller pinned the provider. */
  enginesUsed: RoutingEngine[];
  /** The routing rule that decided (the last of a chain), or null. */
  rule: { id: string; name: string } | null;
  /** A provider key a rule pinned for the primary target; "" lets key selection choose. */
  pinnedKeyId: string;
  /** How the model catalog resolved a bare model, when it did (for the `model-catalog` routing log entry). */
  catalog?: CatalogResolution;
}

/** The model-catalog resolver's choice: the bare model, every candidate provider it found, the one selected. */
export interface CatalogResolution {
  model: string;
  options: readonly CatalogCandidate[];
  selected: string;
}

/** The provider config of a virtual key for a provider, or null when the key has none. */
export function providerConfigOf(virtualKey: VirtualKey, provider: string): ProviderConfig | null {
  return virtualKey.providerConfigs.find((config) => config.provider === provider) ?? null;
}

function isWildcardList(list: readonly string[]): boolean {
  return list.length === 1 && list[0] === "*";
}

function servesAnything(config: ProviderConfig): boolean {
  return config.allowedModels.length > 0 && config.keyIds.length > 0;
}

/** The refusal of a request whose provider configs have no budget or token room left. */
export function providerLimitError(virtualKey: VirtualKey, reasons: readonly LimitExceeded[], model: string): RoutingError {
  const providers = virtualKey.providerConfigs.length === 1 ? "its provider" : "every provider that allows it";
  if (reasons.every((reason) => reason === "budget")) {
    return new RoutingError(
      "policy_budget_exceeded",
      `virtual key "${virtualKey.name}" has spent the budget of ${providers} for model "${model}"; wait for the budget window to reset or raise max_limit`,
    );
  }
  return new RoutingError(
    "policy_rate_limited",
    `virtual key "${virtualKey.name}" has used the token rate limit of ${providers} for model "${model}"; retry after the window resets or raise token_max_limit`,
  );
}

function parseFallbacks(request: RoutingRequest, isProvider: (name: string) => boolean): RouteTarget[] {
  return (request.fallbacks ?? []).map((text, index) => {
    const field = `fallbacks[${index}]`;
    const parsed = parseModelName(text, isProvider, field);
    if (parsed.provider === null) {
      throw new RoutingError(
        "caller_invalid_model",
        `${field} "${text}" names no known provider; fallbacks are written "<provider>/<model>"`,
        field,
      );
    }
    return { provider: parsed.provider, model: parsed.model };
  });
}

/** No fallbacks requested: one shared empty list, never written to. */
const NO_TARGETS: readonly RouteTarget[] = Object.freeze([]);

function sameTarget(a: RouteTarget, b: RouteTarget): boolean {
  return a.provider === b.provider && a.model === b.model;
}

/** Appends targets not yet present, keeping first occurrences. */
function appendDistinct(into: RouteTarget[], targets: readonly RouteTarget[]): RouteTarget[] {
  for (const target of targets) if (!into.some((seen) => sameTarget(seen, target))) into.push(target);
  return into;
}

function routeWithoutKey(request: RoutingRequest, context: RoutingContext): RoutingDecision {
  const parsed = parseModelName(request.model, (name) => context.catalog.isProvider(name));
  const requested = request.fallbacks?.length ? parseFallbacks(request, (name) => context.catalog.isProvider(name)) : [];
  if (parsed.provider !== null) {
    const primary = { provider: parsed.provider, model: parsed.model };
    return { primary, fallbacks: appendDistinct([], requested.filter((t) => !sameTarget(t, primary))), enginesUsed: [], rule: null, pinnedKeyId: "" };
  }
  // Without a virtual key every configured provider is allowed, and the catalog's pool holds only those.
  const options = context.catalog.candidatesOf(parsed.model);
  const preferred = request.integration ? options.find((c) => c.provider === request.integration) : undefined;
  const chosen = preferred ?? options[0];
  if (chosen === undefined) throw providerRequired(parsed);
  const primary = { provider: chosen.provider, model: chosen.model };
  return {
    primary,
    fallbacks: appendDistinct([], requested.filter((t) => !sameTarget(t, primary))),
    enginesUsed: ["model-catalog"],
    rule: null,
    pinnedKeyId: "",
    catalog: { model: parsed.model, options, selected: chosen.provider },
  };
}

function providerRequired(parsed: ParsedModel): RoutingError {
  const slash = parsed.model.indexOf("/");
  const hint = slash > 0 ? ` ("${parsed.model.slice(0, slash)}" is not a configured provider)` : "";
  return new RoutingError(
    "caller_provider_required",
    `no provider serves model "${parsed.model}"${hint}; name the provider as "<provider>/<model>", e.g. "openai/gpt-4o-mini"`,
    "model",
  );
}

function routeWithKey(request: RoutingRequest, virtualKey: VirtualKey, context: RoutingContext): RoutingDecision {
  if (!virtualKey.isActive) {
    throw new RoutingError(
      "policy_virtual_key_inactive",
      `virtual key "${virtualKey.name}" is inactive; activate it or use another key`,
    );
  }
  // A provider the catalog knows or the virtual key configures, so `<provider>/<model>` splits on it.
  const isProvider = (name: string): boolean => context.catalog.isProvider(name) || providerConfigOf(virtualKey, name) !== null;
  const parsed = parseModelName(request.model, isProvider);
  const requested = request.fallbacks?.length ? parseFallbacks(request, isProvider) : NO_TARGETS;

  if (virtualKey.providerConfigs.length === 0) {
    throw new RoutingError(
      "policy_no_providers",
      `virtual key "${virtualKey.name}" has no provider_configs, so it may use no provider (deny by default); add a provider config`,
    );
  }
  const allowed = keepWhere(virtualKey.providerConfigs, servesAnything);
  if (allowed.length === 0) {
    throw new RoutingError(
      "policy_no_providers",
      `every provider config of virtual key "${virtualKey.name}" has an empty allowed_models or key_ids, so it may use no provider; list models and keys, or use ["*"]`,
    );
  }
  // Request fallbacks outside what the key may use are dropped silently, not refused (docs/governance.md).
  const keptFallbacks = keepWhere(requested, (target) => {
    const config = allowed.find((candidate) => candidate.provider === target.provider);
    return config !== undefined && configAllowsModel(config, target.model, context.catalog) && context.limits.exceeded(virtualKey.id, config) === null;
  });

  if (parsed.provider !== null) {
    const primary = { provider: parsed.provider, model: parsed.model };
    const config = allowed.find((candidate) => candidate.provider === parsed.provider);
    if (config === undefined) {
      const blocked = providerConfigOf(virtualKey, parsed.provider) !== null;
      throw new RoutingError(
        "policy_provider_not_allowed",
        blocked
          ? `provider "${parsed.provider}" is blocked for virtual key "${virtualKey.name}" (its allowed_models or key_ids is empty); use one of: ${allowed.map((c) => c.provider).join(", ")}`
          : `provider "${parsed.provider}" is not allowed for virtual key "${virtualKey.name}"; use one of: ${allowed.map((c) => c.provider).join(", ")}`,
        "model",
      );
    }
    if (!configAllowsModel(config, parsed.model, context.catalog)) {
      throw new RoutingError(
        "caller_model_not_allowed",
        `model "${parsed.model}" is not allowed for provider "${config.provider}" on virtual key "${virtualKey.name}"; add it to allowed_models or pick an allowed model`,
        "model",
      );
    }
    const exceeded = context.limits.exceeded(virtualKey.id, config);
    if (exceeded !== null) throw providerLimitError(virtualKey, [exceeded], parsed.model);
    return {
      primary,
      fallbacks: appendDistinct([], keptFallbacks.filter((t) => !sameTarget(t, primary))),
      enginesUsed: [],
      rule: null,
      pinnedKeyId: "",
    };
  }

  const candidates = keepWhere(allowed, (config) => configAllowsModel(config, parsed.model, context.catalog));
  if (candidates.length === 0) {
    throw new RoutingError(
      "caller_model_not_allowed",
      `model "${parsed.model}" is not allowed for any provider configured on virtual key "${virtualKey.name}" (providers: ${allowed.map((c) => c.provider).join(", ")}); pick an allowed model or add it to allowed_models`,
      "model",
    );
  }
  const eligible = keepWhere(candidates, (config) => context.limits.exceeded(virtualKey.id, config) === null);
  if (eligible.length === 0) {
    const reasons = candidates.map((config) => context.limits.exceeded(virtualKey.id, config)).filter((reason) => reason !== null);
    throw providerLimitError(virtualKey, reasons, parsed.model);
  }

  const chosen = eligible[weightedIndex(eligible, (config) => config.weight, context.random)] as ProviderConfig;
  // A provider allowed through the catalog (allowed_models ["*"]) receives its own id for the model
  // (an aggregator's `openai/gpt-4o`); an explicit list names the model as the provider takes it.
  const targetOf = (config: ProviderConfig): RouteTarget => ({
    provider: config.provider,
    model: isWildcardList(config.allowedModels) ? context.catalog.idAt(config.provider, parsed.model) : parsed.model,
  });
  const primary = targetOf(chosen);
  // Array.prototype.sort is stable, so equal weights keep their configured order.
  const rest = eligible
    .filter((config) => config !== chosen)
    .sort((a, b) => b.weight - a.weight)
    .map(targetOf);
  const fallbacks = appendDistinct(appendDistinct([], keptFallbacks), rest).filter((t) => !sameTarget(t, primary));
  return { primary, fallbacks, enginesUsed: ["governance"], rule: null, pinnedKeyId: "" };
}

function routeGoverned(request: RoutingRequest, context: RoutingContext): RoutingDecision {
  return request.virtualKey === null ? routeWithoutKey(request, context) : routeWithKey(request, request.virtualKey, context);
}

/**
 * Evaluates the routing rules: a match rewrites the model (as `provider/model` when it names a provider,
 * which skips the key's provider_configs selection) and replaces the fallbacks when the rule has any.
 */
function applyRules(request: RoutingRequest, rules: RulesInput, context: RoutingContext): { request: RoutingRequest; match: RuleMatch } | null {
  const virtualKey = request.virtualKey;
  if (virtualKey !== null && !virtualKey.isActive) return null;
  const isProvider = (name: string): boolean => context.catalog.isProvider(name) || (virtualKey !== null && providerConfigOf(virtualKey, name) !== null);
  const parsed = parseModelName(request.model, isProvider);
  const provider = parsed.provider ?? "";
  const match = rules.set.evaluate(
    { provider, model: parsed.model, subject: rules.subject, vars: () => rules.vars(provider, parsed.model), headerNames: rules.headerNames },
    context.random,
    rules.onError,
  );
  if (match === null) return null;
  const model = match.provider === "" ? match.model : `${match.provider}/${match.model}`;
  const fallbacks = match.fallbacks.length > 0 ? match.fallbacks.map((f) => `${f.provider}/${f.model === "" ? match.model : f.model}`) : request.fallbacks;
  return { request: { ...request, model, ...(fallbacks ? { fallbacks } : {}) }, match };
}

/** The keys a rule's fallbacks pin, put on the decision's fallback targets they name. */
function withFallbackKeys(fallbacks: RouteTarget[], match: RuleMatch): RouteTarget[] {
  const pinned = new Map<string, string>();
  for (const f of match.fallbacks) if (f.keyId !== "") pinned.set(`${f.provider}/${f.model === "" ? match.model : f.model}`, f.keyId);
  if (pinned.size === 0) return fallbacks;
  return fallbacks.map((target) => {
    const keyId = pinned.get(`${target.provider}/${target.model}`);
    return keyId === undefined ? target : { ...target, keyId };
  });
}

/** Decides the primary provider/model and the fallbacks of a request: routing rules, then the virtual key's rules. */
export function routeRequest(request: RoutingRequest, context: RoutingContext): RoutingDecision {
  const ruled = request.rules === undefined ? null : applyRules(request, request.rules, context);
  if (ruled === null) return routeGoverned(request, context);
  const decision = routeGoverned(ruled.request, context);
  return {
    ...decision,
    fallbacks: withFallbackKeys(decision.fallbacks, ruled.match),
    enginesUsed: ["routing-rule", ...decision.enginesUsed],
    rule: { id: ruled.match.rule.id, name: ruled.match.rule.name },
    pinnedKeyId: ruled.match.keyId,
  };
}

/** The decision's targets as `provider/model` strings, primary first (for logs and the rewritten body). */
export function decisionTargets(decision: RoutingDecision): string[] {
  return [decision.primary, ...decision.fallbacks].map(formatTarget);
}
