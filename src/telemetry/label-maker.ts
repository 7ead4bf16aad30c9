/**
 * Turns the label values a sample carries into the LabelSet its family counts it under. A LabelMaker is
 * made per MetricSet and LabelCap: its caches hold capped values, valid only for that cap.
 */
import { boundedCache } from "../bounded-cache.js";
import type { LabelCap } from "./label-cap.js";
import { appendKey, type Labels, type LabelSet } from "./metric-families.js";
import type { BaseLabels, CustomLabelValues, RoutingEngine } from "./metric-labels.js";
import type { MetricSet } from "./metric-set.js";
import { innerMap } from "./nested-map.js";

/** Resolved label sets kept; beyond it the least recently used give way (values the cap admitted stay admitted). */
const MAX_CACHED_LABEL_SETS = 10_000;

/** Base label sets remembered by value, so traffic spread over a few keys or models resolves none of them again. */
const RECENT_BASES = 8;

/** A resolved base label set and the sets derived from it with extra labels (is_success, status_code, ...). */
interface ResolvedBase {
  set: LabelSet;
  extras: Map<string, LabelSet>;
  /** Sets with one extra label, by its name and value: looked up without building a key. */
  single: Map<string, Map<string, LabelSet>>;
}

/** Whether two base label sources give the same label values (as baseValues reads them). */
function sameBaseValues(a: BaseLabels, b: BaseLabels, userLabels: boolean): boolean {
  return (
    a.provider === b.provider &&
    a.model === b.model &&
    a.method === b.method &&
    (a.alias ?? "") === (b.alias ?? "") &&
    (a.virtualKeyId ?? "") === (b.virtualKeyId ?? "") &&
    (a.virtualKeyName ?? "") === (b.virtualKeyName ?? "") &&
    sameEngines(a.routingEngineUsed, b.routingEngineUsed) &&
    (a.routingRuleId ?? "") === (b.routingRuleId ?? "") &&
    (a.routingRuleName ?? "") === (b.routingRuleName ?? "") &&
    (a.complexityTier ?? "") === (b.complexityTier ?? "") &&
    (a.complexityMechanism ?? "") === (b.complexityMechanism ?? "") &&
    (a.selectedKeyId ?? "") === (b.selectedKeyId ?? "") &&
    (a.selectedKeyName ?? "") === (b.selectedKeyName ?? "") &&
    (a.fallbackIndex ?? 0) === (b.fallbackIndex ?? 0) &&
    (a.teamId ?? "") === (b.teamId ?? "") &&
    (a.teamName ?? "") === (b.teamName ?? "") &&
    (a.customerId ?? "") === (b.customerId ?? "") &&
    (a.customerName ?? "") === (b.customerName ?? "") &&
    (!userLabels || ((a.userId ?? "") === (b.userId ?? "") && (a.userName ?? "") === (b.userName ?? "")))
  );
}

function sameEngines(a: readonly RoutingEngine[] | undefined, b: readonly RoutingEngine[] | undefined): boolean {
  if (a === b) return true;
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  for (let i = 0; i < left.length; i++) if (left[i] !== right[i]) return false;
  return true;
}

/**
 * Resolves label values into LabelSets for the current label lists, every value through the cardinality
 * cap. Resolution is cached by the raw values, so a label set seen before costs one string build and one
 * cache lookup, and the cap is consulted only for a new combination.
 */
export class LabelMaker {
  private readonly owned = boundedCache<string, LabelSet>(MAX_CACHED_LABEL_SETS);
  /** http_* label sets by path, method and status, used while no custom labels are configured. */
  private readonly httpSets = boundedCache<string, Map<string, Map<number, LabelSet>>>(MAX_CACHED_LABEL_SETS);
  private readonly bases = boundedCache<string, ResolvedBase>(MAX_CACHED_LABEL_SETS);
  /**
   * The last base resolved: one request records several metrics with the same BaseLabels object. Steady
   * traffic sends request after request with the same values, found among the recent ones by value:
   * neither builds the 18-value key again.
   */
  private last: { base: BaseLabels; custom: CustomLabelValues | undefined; resolved: ResolvedBase } | null = null;
  /** The last RECENT_BASES bases resolved, compared by value; written round-robin. */
  private readonly recent: { base: BaseLabels; custom: CustomLabelValues | undefined; resolved: ResolvedBase }[] = [];
  private nextRecent = 0;

  constructor(
    private readonly m: MetricSet,
    private readonly cap: LabelCap,
  ) {}

  /** Own labels plus the current custom labels. */
  own(values: Labels, custom: CustomLabelValues | undefined): LabelSet {
    let raw = "";
    for (const name in values) raw = appendKey(appendKey(raw, name), values[name] as string);
    raw = this.customKey(raw, custom);
    let set = this.owned.get(raw);
    if (set === undefined) {
      set = this.resolve(values, custom);
      this.owned.set(raw, set);
    }
    return set;
  }

  /** http_* labels: with no custom labels configured (the common case) found by path, method and status without building a key. */
  http(path: string, method: string, status: number, custom: CustomLabelValues | undefined): LabelSet {
    if (this.m.custom.length > 0) return this.own({ path, method, status: String(status) }, custom);
    const byStatus = innerMap(innerMap(this.httpSets, path), method);
    let set = byStatus.get(status);
    if (set === undefined) {
      set = this.own({ path, method, status: String(status) }, custom);
      byStatus.set(status, set);
    }
    return set;
  }

  /** The base label set (user labels when enabled) plus `extra` and the custom labels. */
  base(b: BaseLabels, custom: CustomLabelValues | undefined, extra?: Labels): LabelSet {
    const resolved = this.resolvedBase(b, custom);
    if (extra === undefined) return resolved.set;
    let raw = "";
    for (const name in extra) raw = appendKey(appendKey(raw, name), extra[name] as string);
    return this.extended(resolved, extra, raw);
  }

  /** The base label set plus one extra label (is_success, cache_type). */
  baseWith(b: BaseLabels, custom: CustomLabelValues | undefined, name: string, value: string): LabelSet {
    const resolved = this.resolvedBase(b, custom);
    const byValue = innerMap(resolved.single, name);
    let set = byValue.get(value);
    if (set === undefined) {
      set = this.extended(resolved, { [name]: value }, appendKey(appendKey("", name), value));
      byValue.set(value, set);
    }
    return set;
  }

  /** The set of `resolved` with `extra` (whose key text is `raw`), resolved once. */
  private extended(resolved: ResolvedBase, extra: Labels, raw: string): LabelSet {
    let set = resolved.extras.get(raw);
    if (set === undefined) {
      const labels: Labels = { ...resolved.set.labels };
      let key = resolved.set.key;
      for (const name in extra) {
        const value = this.cap.admit(name, extra[name] as string);
        labels[name] = value;
        key = appendKey(appendKey(key, name), value);
      }
      set = { labels, key };
      resolved.extras.set(raw, set);
    }
    return set;
  }

  private resolvedBase(b: BaseLabels, custom: CustomLabelValues | undefined): ResolvedBase {
    const last = this.last;
    if (last !== null && last.base === b && last.custom === custom) return last.resolved;
    // Requests that differ only in the key picked (or the model asked for) alternate between a few sets.
    for (const recent of this.recent) {
      if ((recent.base === b || sameBaseValues(recent.base, b, this.m.userLabels)) && this.sameCustom(recent.custom, custom)) {
        this.last = recent;
        return recent.resolved;
      }
    }
    const values = this.baseValues(b);
    let raw = "";
    for (const name in values) raw = appendKey(raw, values[name] as string);
    raw = this.customKey(raw, custom);
    let resolved = this.bases.get(raw);
    if (resolved === undefined) {
      resolved = { set: this.resolve(values, custom), extras: new Map(), single: new Map() };
      this.bases.set(raw, resolved);
    }
    const entry = { base: b, custom, resolved };
    this.recent[this.nextRecent] = entry;
    this.nextRecent = (this.nextRecent + 1) % RECENT_BASES;
    this.last = entry;
    return resolved;
  }

  /** Whether two requests' dimension values give the same custom labels. */
  private sameCustom(a: CustomLabelValues | undefined, b: CustomLabelValues | undefined): boolean {
    if (a === b) return true;
    for (const name of this.m.custom) if ((a?.[name] ?? "") !== (b?.[name] ?? "")) return false;
    return true;
  }

  private customKey(raw: string, custom: CustomLabelValues | undefined): string {
    for (const name of this.m.custom) raw = appendKey(raw, custom?.[name] ?? "");
    return raw;
  }

  /** Caps every value; the key is built from the capped values, so overflowed values share one series. */
  private resolve(values: Labels, custom: CustomLabelValues | undefined): LabelSet {
    const labels: Labels = {};
    let key = "";
    for (const name in values) {
      const value = this.cap.admit(name, values[name] as string);
      labels[name] = value;
      key = appendKey(appendKey(key, name), value);
    }
    for (const name of this.m.custom) {
      const value = this.cap.admit(name, custom?.[name] ?? "");
      labels[name] = value;
      key = appendKey(appendKey(key, name), value);
    }
    return { labels, key };
  }

  private baseValues(b: BaseLabels): Labels {
    return {
      provider: b.provider,
      model: b.model,
      alias: b.alias ?? "",
      method: b.method,
      virtual_key_id: b.virtualKeyId ?? "",
      virtual_key_name: b.virtualKeyName ?? "",
      routing_engine_used: (b.routingEngineUsed ?? []).join(","),
      routing_rule_id: b.routingRuleId ?? "",
      routing_rule_name: b.routingRuleName ?? "",
      complexity_tier: b.complexityTier ?? "",
      complexity_mechanism: b.complexityMechanism ?? "",
      selected_key_id: b.selectedKeyId ?? "",
      selected_key_name: b.selectedKeyName ?? "",
      fallback_index: String(b.fallbackIndex ?? 0),
      team_id: b.teamId ?? "",
      team_name: b.teamName ?? "",
      customer_id: b.customerId ?? "",
      customer_name: b.customerName ?? "",
      ...(this.m.userLabels ? { user_id: b.userId ?? "", user_name: b.userName ?? "" } : {}),
    };
  }
}
