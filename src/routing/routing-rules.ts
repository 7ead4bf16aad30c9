/**
 * Routing rules in memory: indexed by scope and ordered once per change, evaluated per request without
 * touching the database. Scopes run most specific first (virtual key, team, customer, global), ascending
 * priority within a scope; the first enabled rule whose condition holds wins and picks a target by weight.
 * A chain rule evaluates the rules again on the rewritten provider and model, until nothing matches,
 * nothing changes, or a rule would match a second time.
 */
import { boundedCache } from "../bounded-cache.js";
import type { RuleCondition, RuleVariables } from "./cel-expression.js";
import { weightedIndex } from "./weighted-random.js";
import type { Random } from "./types.js";

/** The level a rule applies at. */
export type RuleScope = "global" | "customer" | "team" | "virtual_key";

/** Most specific first: the order scopes are evaluated in. */
export const SCOPE_ORDER: readonly RuleScope[] = ["virtual_key", "team", "customer", "global"];

/** One weighted destination of a rule; empty strings keep the request's value. */
export interface RuleTarget {
  provider: string;
  model: string;
  keyId: string;
  weight: number;
}

/** A fallback of a rule: `provider/model`, `provider/` for the chosen model on that provider, or an object that may pin a key. */
export interface RuleFallback {
  provider: string;
  /** Empty: the model the rule chose. */
  model: string;
  /** "" lets key selection choose. */
  keyId: string;
}

/** A compiled routing rule. */
export interface RoutingRule {
  id: string;
  name: string;
  enabled: boolean;
  priority: number;
  scope: RuleScope;
  /** "" for global. */
  scopeId: string;
  targets: readonly RuleTarget[];
  fallbacks: readonly RuleFallback[];
  chainRule: boolean;
  condition: RuleCondition;
}

/** Who is asking, for picking the rules in scope. */
export interface RuleSubject {
  virtualKeyId: string;
  teamId: string;
  customerId: string;
}

/** The request as the rules see it; `vars` is built only when a rule in scope passes its guard. */
export interface RuleInput {
  provider: string;
  model: string;
  subject: RuleSubject;
  vars: () => RuleVariables;
  /** The (lowercase) names of the headers the request sent, for the rules' guards; read only when a rule has one. */
  headerNames: () => ReadonlySet<string>;
}

/** What the matching rules decided. */
export interface RuleMatch {
  /** The last rule that matched (the one the labels name). */
  rule: RoutingRule;
  /** Every rule that matched, in order. */
  chain: RoutingRule[];
  /** "" when no rule named one: the request's provider stands. */
  provider: string;
  model: string;
  /** "" when no target pinned a key. */
  keyId: string;
  /** The fallbacks of the last rule that had any. */
  fallbacks: RuleFallback[];
}

/** A rule whose condition failed to evaluate (a missing header, say): it counted as no match. */
export interface RuleEvaluationError {
  rule: RoutingRule;
  error: Error;
}

/**
 * The rules in scope of a subject, with their guards indexed: a request finds the rules it could match by
 * its model and header names, in a few map lookups however many rules are in scope.
 */
interface ScopedRules {
  rules: RoutingRule[];
  /** Positions of rules without a guard: always evaluated. */
  open: number[];
  /** Positions of guarded rules by a model their guard names. */
  byModel: Map<string, number[]>;
  /** Positions of guarded rules by a header their guard names. */
  byHeader: Map<string, number[]>;
}

function indexGuards(rules: RoutingRule[]): ScopedRules {
  const scoped: ScopedRules = { rules, open: [], byModel: new Map(), byHeader: new Map() };
  const add = (map: Map<string, number[]>, key: string, position: number): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [position]);
    else if (list[list.length - 1] !== position) list.push(position);
  };
  rules.forEach((rule, position) => {
    const guard = rule.condition.guard;
    if (guard === null) {
      scoped.open.push(position);
      return;
    }
    for (const model of guard.models) add(scoped.byModel, model, position);
    for (const header of guard.headers) add(scoped.byHeader, header, position);
  });
  return scoped;
}

/** The positions of the rules a request with this model and these headers could match, in order. */
function candidates(scoped: ScopedRules, model: string, headerNames: () => ReadonlySet<string>): readonly number[] {
  if (scoped.byModel.size === 0 && scoped.byHeader.size === 0) return scoped.open;
  const lists: number[][] = scoped.open.length > 0 ? [scoped.open] : [];
  const byModel = scoped.byModel.get(model);
  if (byModel !== undefined) lists.push(byModel);
  if (scoped.byHeader.size > 0) {
    for (const name of headerNames()) {
      const list = scoped.byHeader.get(name);
      if (list !== undefined) lists.push(list);
    }
  }
  if (lists.length <= 1) return lists[0] ?? [];
  return [...new Set(lists.flat())].sort((a, b) => a - b);
}

/** At most this many rules apply to one request, so a chain always ends. */
const MAX_CHAIN = 10;

/** Subjects whose in-scope rule lists are kept between changes: a gateway has few, but a flood of unknown ones must not grow it forever. */
const MAX_CACHED_SUBJECTS = 10_000;

function scopeKey(scope: RuleScope, scopeId: string): string {
  return scope === "global" ? "global" : `${scope}:${scopeId}`;
}

/** The routing rules the hot path evaluates. */
export class RoutingRuleSet {
  readonly #byId = new Map<string, RoutingRule>();
  /** Enabled rules by scope key, in ascending priority, then name. */
  #index = new Map<string, RoutingRule[]>();
  /** The rules in scope per subject, built on first use after each change: subjects repeat per key. */
  readonly #inScopeCache = boundedCache<string, ScopedRules>(MAX_CACHED_SUBJECTS);
  /** Whether any enabled rule reads complexity_tier: most gateways have none, and then nothing is classified. */
  #anyReadsComplexity = false;

  /** Adds or replaces a rule. */
  put(rule: RoutingRule): void {
    this.#byId.set(rule.id, rule);
    this.#reindex();
  }

  /** Removes a rule; unknown ids are ignored. */
  remove(id: string): void {
    if (this.#byId.delete(id)) this.#reindex();
  }

  /** Replaces every rule (boot load). */
  replaceAll(rules: readonly RoutingRule[]): void {
    this.#byId.clear();
    for (const rule of rules) this.#byId.set(rule.id, rule);
    this.#reindex();
  }

  /** The rule with this id, or null. */
  byId(id: string): RoutingRule | null {
    return this.#byId.get(id) ?? null;
  }

  /** Every rule (for name checks and listings). */
  all(): RoutingRule[] {
    return [...this.#byId.values()];
  }

  #reindex(): void {
    const index = new Map<string, RoutingRule[]>();
    for (const rule of this.#byId.values()) {
      if (!rule.enabled) continue;
      const key = scopeKey(rule.scope, rule.scopeId);
      const list = index.get(key) ?? [];
      list.push(rule);
      index.set(key, list);
    }
    for (const list of index.values()) list.sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    this.#index = index;
    this.#inScopeCache.clear();
    this.#anyReadsComplexity = [...this.#byId.values()].some((rule) => rule.enabled && rule.condition.reads.has("complexity_tier"));
  }

  /** True when no rule is enabled: requests then skip rule evaluation altogether. */
  get isEmpty(): boolean {
    return this.#index.size === 0;
  }

  /** The enabled rules that apply to a subject, most specific scope first. */
  #inScope(subject: RuleSubject): ScopedRules {
    const cacheKey = `${subject.virtualKeyId}\n${subject.teamId}\n${subject.customerId}`;
    const cached = this.#inScopeCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const out: RoutingRule[] = [];
    const add = (key: string | null): void => {
      const list = key === null ? undefined : this.#index.get(key);
      if (list !== undefined) out.push(...list);
    };
    add(subject.virtualKeyId === "" ? null : scopeKey("virtual_key", subject.virtualKeyId));
    add(subject.teamId === "" ? null : scopeKey("team", subject.teamId));
    add(subject.customerId === "" ? null : scopeKey("customer", subject.customerId));
    add("global");
    const scoped = indexGuards(out);
    this.#inScopeCache.set(cacheKey, scoped);
    return scoped;
  }

  /** True when a rule that applies to the subject reads complexity_tier, which then has to be computed first. */
  needsComplexity(subject: RuleSubject): boolean {
    return this.#anyReadsComplexity && this.#inScope(subject).rules.some((rule) => rule.condition.reads.has("complexity_tier"));
  }

  /**
   * Evaluates the rules for a request; null when none matched. Conditions that fail to evaluate count as
   * no match and are reported to `onError`.
   */
  evaluate(input: RuleInput, random: Random, onError: (failure: RuleEvaluationError) => void): RuleMatch | null {
    const scoped = this.#inScope(input.subject);
    if (scoped.rules.length === 0) return null;
    // Most requests match no rule's guard: they leave before anything is built.
    const first = candidates(scoped, input.model, input.headerNames);
    if (first.length === 0) return null;
    let built: RuleVariables | null = null;
    let provider = input.provider;
    let model = input.model;
    // Built once, and only when a rule passes its guard; a chain round sees its rewritten provider and model.
    const vars = (): RuleVariables => {
      built ??= input.vars();
      if (built.provider !== provider || built.model !== model) built = { ...built, provider, model };
      return built;
    };
    let match: RuleMatch | null = null;
    const seen = new Set<string>();
    for (let round = 0; round < MAX_CHAIN; round++) {
      const rule = firstMatch(scoped.rules, round === 0 ? first : candidates(scoped, model, input.headerNames), vars, seen, onError);
      if (rule === null) break;
      seen.add(rule.id);
      const target = rule.targets[weightedIndex(rule.targets, (t) => t.weight, random)] as RuleTarget;
      const nextProvider = target.provider === "" ? provider : target.provider;
      const nextModel = target.model === "" ? model : target.model;
      const changed = nextProvider !== provider || nextModel !== model;
      const prev = match as RuleMatch | null;
      match = {
        rule,
        chain: [...(prev?.chain ?? []), rule],
        provider: nextProvider,
        model: nextModel,
        keyId: target.keyId !== "" ? target.keyId : changed ? "" : (prev?.keyId ?? ""),
        fallbacks: rule.fallbacks.length > 0 ? [...rule.fallbacks] : (prev?.fallbacks ?? []),
      };
      if (!rule.chainRule || !changed) break;
      provider = nextProvider;
      model = nextModel;
    }
    return match;
  }
}

function firstMatch(
  rules: readonly RoutingRule[],
  positions: readonly number[],
  vars: () => RuleVariables,
  seen: ReadonlySet<string>,
  onError: (failure: RuleEvaluationError) => void,
): RoutingRule | null {
  const chained = seen.size > 0;
  for (const position of positions) {
    const rule = rules[position] as RoutingRule;
    if (chained && seen.has(rule.id)) continue;
    const result = rule.condition(vars());
    if (result === true) return rule;
    if (result instanceof Error) onError({ rule, error: result });
  }
  return null;
}
