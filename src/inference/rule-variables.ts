/**
 * What routing rules see of a request (built only when a rule is in scope) and the routing log entry
 * of a decision.
 */
import type { RuleVariables } from "../routing/cel-expression.js";
import { decisionTargets, type CatalogResolution, type RoutingDecision } from "../routing/governance-router.js";
import { formatTarget } from "../routing/model-name.js";
import type { Hierarchy } from "../routing/hierarchy.js";
import type { RouteTarget, VirtualKey } from "../routing/types.js";
import type { UsageLimits } from "../routing/usage-limits.js";
import type { InferenceMethod } from "../telemetry/metrics.js";
import type { RoutingLogEntry, RoutingLogRecord } from "../telemetry/routing-log.js";
import type { ChatCall } from "./calls.js";

/** Header names arrive lowercase from Node; repeated headers read as one comma-joined value. */
function headerMap(headers: ChatCall["headers"]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out.set(name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value);
  }
  return out;
}

/** The names `headers` has for a request (lowercase, sent with a value), for the rules' guards. */
export function sentHeaderNames(headers: ChatCall["headers"]): ReadonlySet<string> {
  const names = new Set<string>();
  for (const name in headers) if (headers[name] !== undefined) names.add(name.toLowerCase());
  return names;
}

/** Query parameters, then the body's top-level scalar fields (the body wins on a clash). */
function paramMap(call: ChatCall): Map<string, string | number | boolean> {
  const out = new Map<string, string | number | boolean>();
  const url = call.url ?? "";
  const query = url.indexOf("?");
  if (query >= 0) for (const [name, value] of new URLSearchParams(url.slice(query + 1))) out.set(name, value);
  for (const [name, value] of Object.entries(call.body)) {
    if (typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) out.set(name, value);
  }
  return out;
}

/** The variables of one request for routing-rule conditions. */
export function ruleVariables(
  call: ChatCall,
  method: InferenceMethod,
  virtualKey: VirtualKey | null,
  provider: string,
  model: string,
  state: { limits: UsageLimits; hierarchy: Hierarchy },
  complexityTier: string,
): RuleVariables {
  const configs = virtualKey === null ? { budget: 0, tokens: 0 } : state.limits.percentUsed(virtualKey.id, virtualKey.providerConfigs);
  const levels = virtualKey === null ? { budget: 0, tokens: 0, requests: 0 } : state.hierarchy.percentUsed(virtualKey);
  const members = virtualKey === null ? null : state.hierarchy.membership(virtualKey);
  const used = { budget: Math.max(configs.budget, levels.budget), tokens: Math.max(configs.tokens, levels.tokens) };
  return {
    model,
    provider,
    request_type: method,
    headers: headerMap(call.headers),
    params: paramMap(call),
    virtual_key_id: virtualKey?.id ?? "",
    virtual_key_name: virtualKey?.name ?? "",
    team_id: members?.team?.id ?? "",
    team_name: members?.team?.name ?? "",
    customer_id: members?.customer?.id ?? "",
    customer_name: members?.customer?.name ?? "",
    budget_used: used.budget,
    tokens_used: used.tokens,
    // The tightest configured limit is the one closest to running out.
    request: Math.max(used.budget, used.tokens, levels.requests),
    complexity_tier: complexityTier,
  };
}

/** The `model-catalog` entry: the model, how many catalog options it had, which, and the provider selected. */
function catalogMessage(resolution: CatalogResolution, primary: RouteTarget): string {
  const options = resolution.options.map((c) => (c.rule === "direct" ? c.provider : `${c.provider} (${c.rule}: ${c.model})`));
  const moved = primary.provider === resolution.selected ? "" : `; load balancing chose "${primary.provider}"`;
  return `model-catalog: model "${resolution.model}" has ${options.length} catalog option${options.length === 1 ? "" : "s"} [${options.join(", ")}]; selected provider "${resolution.selected}"${moved}: ${formatTarget(primary)}`;
}

/** Requested model names remembered per virtual key; past it the memo starts over (names come from callers). */
const RECORDS_PER_KEY = 256;

/** A decision as the routing log keeps it: the three values its entry is built from, when read. */
class DecisionRecord implements RoutingLogRecord {
  constructor(
    readonly requestedModel: string,
    readonly decision: RoutingDecision,
    readonly virtualKey: VirtualKey | null,
  ) {}

  describe(): Omit<RoutingLogEntry, "time"> {
    return routingLogEntry(this.requestedModel, this.decision, this.virtualKey);
  }
}

/**
 * The routing log's records, one shared by every request of a virtual key that named the same model and was
 * routed the same way. The log keeps its last thousand decisions; a record (and the decision it holds) made
 * per request lived through V8's young-generation collections and was copied into the old generation under
 * load, all garbage a moment later, which the old generation's collections then
 * had to clear. A repeated decision now keeps nothing new.
 */
export class RoutingLogRecords {
  // Weakly keyed: a virtual key replaced by an update takes its records with it.
  readonly #byKey = new WeakMap<VirtualKey, Map<string, DecisionRecord>>();
  readonly #keyless = new Map<string, DecisionRecord>();

  /** The record of a decision: a kept one when it describes the same decision. */
  recordOf(requestedModel: string, decision: RoutingDecision, virtualKey: VirtualKey | null): RoutingLogRecord {
    const byModel = virtualKey === null ? this.#keyless : this.#recordsOf(virtualKey);
    const known = byModel.get(requestedModel);
    if (known !== undefined && sameDecision(known.decision, decision)) return known;
    const record = new DecisionRecord(requestedModel, decision, virtualKey);
    if (byModel.size >= RECORDS_PER_KEY) byModel.clear();
    byModel.set(requestedModel, record);
    return record;
  }

  #recordsOf(virtualKey: VirtualKey): Map<string, DecisionRecord> {
    let byModel = this.#byKey.get(virtualKey);
    if (byModel === undefined) {
      byModel = new Map();
      this.#byKey.set(virtualKey, byModel);
    }
    return byModel;
  }
}

function sameTarget(a: RouteTarget, b: RouteTarget): boolean {
  return a.provider === b.provider && a.model === b.model;
}

function sameList<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!same(a[i] as T, b[i] as T)) return false;
  return true;
}

function sameCandidate(a: CatalogResolution["options"][number], b: CatalogResolution["options"][number]): boolean {
  return a.provider === b.provider && a.rule === b.rule && a.model === b.model;
}

/** True when two decisions give the same routing log entry: every field routingLogEntry reads is equal. */
function sameDecision(a: RoutingDecision, b: RoutingDecision): boolean {
  if (a === b) return true;
  if (!sameTarget(a.primary, b.primary) || a.rule?.id !== b.rule?.id || a.rule?.name !== b.rule?.name) return false;
  if (!sameList(a.fallbacks, b.fallbacks, sameTarget) || !sameList(a.enginesUsed, b.enginesUsed, (x, y) => x === y)) return false;
  if (a.catalog === b.catalog) return true;
  if (a.catalog === undefined || b.catalog === undefined) return false;
  return a.catalog.model === b.catalog.model && a.catalog.selected === b.catalog.selected && sameList(a.catalog.options, b.catalog.options, sameCandidate);
}

/** The routing log entry of a decision, but its time. */
export function routingLogEntry(requestedModel: string, decision: RoutingDecision, virtualKey: VirtualKey | null): Omit<RoutingLogEntry, "time"> {
  const targets = decisionTargets(decision);
  const by = decision.rule !== null
    ? `routing rule "${decision.rule.name}" matched`
    : decision.enginesUsed.includes("governance")
      ? "the virtual key's provider_configs chose"
      : decision.enginesUsed.includes("model-catalog")
        ? "the model catalog chose"
        : "the request named its provider";
  return {
    engines: [...decision.enginesUsed],
    requestedModel,
    provider: decision.primary.provider,
    model: decision.primary.model,
    routingRuleId: decision.rule?.id ?? "",
    routingRuleName: decision.rule?.name ?? "",
    fallbacks: targets.slice(1),
    virtualKeyId: virtualKey?.id ?? "",
    message: decision.catalog === undefined ? `${by}: ${formatTarget(decision.primary)}` : catalogMessage(decision.catalog, decision.primary),
  };
}
