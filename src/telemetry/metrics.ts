/**
 * The gateway's Prometheus metrics (docs/telemetry.md lists them), in our own prom-client Registry.
 *
 * Recording is off the request path: every record* method only appends a closure to a queue (O(1), never
 * throws) and schedules one setImmediate flush, which does the prom-client work (label checks, the
 * cardinality cap, bucket search) after the current I/O callbacks. A scrape flushes the queue first, so it
 * sees everything recorded before it.
 *
 * Custom labels (client.prometheus_labels) are part of every metric's label set, and prom-client fixes a
 * label set at registration. When the list changes, every metric is re-created in a fresh registry: the
 * counters and histograms restart from zero (Prometheus treats it like a process restart), while the two
 * state gauges (gw_active_requests, gw_provider_key_up) are kept outside prom-client and carry over.
 */
import { Gauge, Registry, type Metric } from "prom-client";
import { boundedCache } from "../bounded-cache.js";
import { createProcessRegistry } from "./process-metrics.js";
import type { Logger } from "./logger.js";
import { customLabelProblem } from "./label-names.js";
import type { TraceIdSource } from "./tracing.js";
import { DEFAULT_MAX_LABEL_VALUES, LabelCap } from "./label-cap.js";
import { appendKey, CounterFamily, HistogramFamily, type Labels, type LabelSet } from "./metric-families.js";
import { innerMap } from "./nested-map.js";

/** Custom label -> value; labels not given are recorded as "". Defaults to the current request's dimensions. */
export type CustomLabelValues = Readonly<Record<string, string>>;

/**
 * The `method` base label: the kind of inference request. "responses" is a kind of its own,
 * so the Responses API can be told apart from chat completions on a dashboard.
 */
export type InferenceMethod = "chat" | "text" | "embedding" | "speech" | "transcription" | "responses";

/** Which response cache answered a request (the `cache_type` label). */
export type CacheType = "direct" | "semantic";

/** One entry of the comma-separated `routing_engine_used` label. */
export type RoutingEngine = "routing-rule" | "governance" | "loadbalancing" | "model-catalog" | "core";
export type ComplexityTier = "SIMPLE" | "MEDIUM" | "COMPLEX";
export type ComplexityMechanism = "semantic" | "llm" | "session" | "skipped";
/** error_type of gw_error_requests_total: the same vocabulary as the /v1 error envelope's `type`. */
export type InferenceErrorType = `${"caller" | "policy" | "provider" | "gateway"}_${string}`;
/** error_type of the MCP metric: empty on success. */
export type McpErrorType = "" | "auth_required" | "_OTHER";

/** The base label set of the upstream provider metrics; omitted strings are "" and fallbackIndex is 0. */
export interface BaseLabels {
  provider: string;
  model: string;
  method: InferenceMethod;
  /** Empty when the request named no alias. */
  alias?: string;
  virtualKeyId?: string;
  virtualKeyName?: string;
  routingEngineUsed?: readonly RoutingEngine[];
  routingRuleId?: string;
  routingRuleName?: string;
  complexityTier?: ComplexityTier | "";
  complexityMechanism?: ComplexityMechanism | "";
  selectedKeyId?: string;
  selectedKeyName?: string;
  /** 0 on the first attempt. */
  fallbackIndex?: number;
  /** Empty without governance. */
  teamId?: string;
  teamName?: string;
  customerId?: string;
  customerName?: string;
  /** Only recorded when the Metrics were built with userLabelsEnabled. */
  userId?: string;
  userName?: string;
  /** The request's dimension values for the custom labels (from its x-gw-dim-* headers); not a label itself. */
  custom?: CustomLabelValues;
  /** The request's span when it is traced, whose ids its log lines carry; not a label. */
  logTrace?: TraceIdSource;
}

/** Custom label values of a record without a request (every custom label ""). */
const NO_CUSTOM: CustomLabelValues = Object.freeze({});

/** Governance labels of the MCP metric; omitted ones are "". */
export interface GovernanceLabels {
  virtualKeyId?: string;
  virtualKeyName?: string;
  teamId?: string;
  teamName?: string;
  customerId?: string;
  customerName?: string;
  businessUnitId?: string;
  businessUnitName?: string;
}

/** One HTTP request as the transport saw it. */
export interface HttpRequestSample {
  /** The route template, Connect procedure path, "/health", "/metrics" or "unmatched"; never the raw path. */
  path: string;
  method: string;
  status: number;
  durationS: number;
  reqBytes: number;
  resBytes: number;
  custom?: CustomLabelValues;
}

/** One MCP tool execution. */
export interface McpToolCallSample {
  mcpClient: string;
  toolName: string;
  durationS: number;
  errorType: McpErrorType;
  governance?: GovernanceLabels;
  custom?: CustomLabelValues;
}

/** How the metrics are built. */
export interface MetricsOptions {
  /** client.prometheus_labels; invalid or reserved names are skipped with a warning. */
  customLabels?: readonly string[];
  /** Adds user_id and user_name to the base label set (telemetry user_labels_enabled). */
  userLabelsEnabled?: boolean;
  /** Distinct values per label before values become "__overflow__" (default 1000). */
  maxLabelValues?: number;
  /** Records queued beyond this are dropped (and counted) instead of growing memory; default 100000. */
  maxPending?: number;
  /**
   * false drops every sample before it is queued, so `npm run bench` can measure what recording costs a
   * request; default true.
   */
  recording?: boolean;
  /** Adds prom-client's default process_* and nodejs_* metrics and gw_build_info to the exposition; default false. */
  processMetrics?: boolean;
  logger?: Logger;
}

const HTTP_LABELS = ["path", "method", "status"] as const;
const BASE_LABELS = [
  "provider", "model", "alias", "method", "virtual_key_id", "virtual_key_name", "routing_engine_used",
  "routing_rule_id", "routing_rule_name", "complexity_tier", "complexity_mechanism", "selected_key_id",
  "selected_key_name", "fallback_index", "team_id", "team_name", "customer_id", "customer_name",
] as const;
const USER_LABELS = ["user_id", "user_name"] as const;
const GOVERNANCE_LABELS = [
  "virtual_key_id", "virtual_key_name", "team_id", "team_name", "customer_id", "customer_name",
  "business_unit_id", "business_unit_name",
] as const;

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BYTES_BUCKETS = [100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];
const MICROSECONDS_BUCKETS = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000];
const INTER_TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const RETRY_BUCKETS = [0, 1, 2, 3, 5, 10];

/**
 * Every metric the gateway feeds, registered in one registry with one custom label list. Families whose
 * feature does not exist yet (per-component overhead) are left out until it does: an always-empty
 * family would only mislead.
 */
class MetricSet {
  readonly registry = new Registry();
  readonly httpRequests: CounterFamily;
  readonly httpDuration: HistogramFamily;
  readonly httpRequestSize: HistogramFamily;
  readonly httpResponseSize: HistogramFamily;
  readonly upstreamRequests: CounterFamily;
  readonly successRequests: CounterFamily;
  readonly errorRequests: CounterFamily;
  readonly upstreamLatency: HistogramFamily;
  readonly overheadLatency: HistogramFamily;
  readonly inputTokens: CounterFamily;
  readonly outputTokens: CounterFamily;
  readonly cost: CounterFamily;
  readonly cacheHits: CounterFamily;
  readonly keyRotations: CounterFamily;
  readonly retries: HistogramFamily;
  readonly firstToken: HistogramFamily;
  readonly interToken: HistogramFamily;
  readonly mcpDuration: HistogramFamily;
  readonly routingEmbeddingRequests: CounterFamily;
  readonly routingEmbeddingCost: CounterFamily;

  constructor(
    readonly custom: readonly string[],
    readonly userLabels: boolean,
    state: StateGauges,
  ) {
    const registers = [this.registry];
    const baseOnly = [...BASE_LABELS, ...(userLabels ? USER_LABELS : [])];
    const base = [...baseOnly, ...custom];
    const baseWith = (...extra: string[]): string[] => [...baseOnly, ...extra, ...custom];
    const withCustom = (names: readonly string[]): string[] => [...names, ...custom];
    // The Registry formats any object with name, help, type and get(); its typings only name prom-client's classes.
    const register = <T extends CounterFamily | HistogramFamily>(family: T): T => {
      this.registry.registerMetric(family as unknown as Metric);
      return family;
    };
    const counter = (name: string, help: string, labelNames: string[]) => register(new CounterFamily(name, help, labelNames));
    const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) =>
      register(new HistogramFamily(name, help, labelNames, buckets));

    this.httpRequests = counter("http_requests_total", "HTTP requests served, by route template, method and status.", withCustom(HTTP_LABELS));
    this.httpDuration = histogram("http_request_duration_seconds", "Time to serve an HTTP request, in seconds.", withCustom(HTTP_LABELS), SECONDS_BUCKETS);
    this.httpRequestSize = histogram("http_request_size_bytes", "HTTP request body size (Content-Length), in bytes.", withCustom(HTTP_LABELS), BYTES_BUCKETS);
    this.httpResponseSize = histogram("http_response_size_bytes", "HTTP response body size, in bytes.", withCustom(HTTP_LABELS), BYTES_BUCKETS);
    this.upstreamRequests = counter("gw_upstream_requests_total", "Inference requests, policy refusals included (they never reach a provider).", base);
    this.successRequests = counter("gw_success_requests_total", "Inference requests that succeeded.", base);
    this.errorRequests = counter("gw_error_requests_total", "Inference requests that failed, by status code and error type (caller_, policy_, provider_, gateway_).", baseWith("status_code", "error_type"));
    this.upstreamLatency = histogram("gw_upstream_latency_seconds", "Upstream provider latency, in seconds.", baseWith("is_success"), SECONDS_BUCKETS);
    this.overheadLatency = histogram("gw_overhead_latency_microseconds", "The gateway's own time per request excluding the upstream, in microseconds.", base, MICROSECONDS_BUCKETS);
    this.inputTokens = counter("gw_input_tokens_total", "Input (prompt) tokens.", base);
    this.outputTokens = counter("gw_output_tokens_total", "Output (completion) tokens.", base);
    this.cost = counter("gw_cost_total", "Cost of inference requests, in USD.", base);
    this.routingEmbeddingRequests = counter("gw_routing_embedding_requests_total", "Embedding calls made to compute complexity tiers, by phase (request or warmup).", withCustom(["provider", "model", "phase"]));
    this.routingEmbeddingCost = counter("gw_routing_embedding_cost_total", "Cost of the embedding calls made to compute complexity tiers, in USD.", withCustom(["provider", "model", "phase"]));
    this.cacheHits = counter("gw_cache_hits_total", "Inference requests answered from the response cache, by cache_type (direct or semantic).", baseWith("cache_type"));
    new Gauge({
      name: "gw_active_requests",
      help: "Inference requests in flight.",
      labelNames: withCustom(["method"]),
      registers,
      collect() {
        this.reset();
        for (const { labels, value } of state.active.values()) this.set(state.project(labels, ["method"], custom), value);
      },
    });
    new Gauge({
      name: "gw_provider_key_up",
      help: "1 after the provider key's last request succeeded, 0 after it failed.",
      labelNames: withCustom(["provider", "key_id", "key_name"]),
      registers,
      collect() {
        this.reset();
        for (const { labels, value } of state.keyUp.values()) this.set(state.project(labels, ["provider", "key_id", "key_name"], custom), value);
      },
    });
    new Gauge({
      name: "gw_route_state",
      help: "1 for the state each provider route (key_id empty) and key route is in on this node, 0 for the other states.",
      labelNames: withCustom(["provider", "key_id", "key_name", "state"]),
      registers,
      collect() {
        this.reset();
        const source = state.routeStates;
        if (source === null) return;
        for (const route of source()) {
          for (const name of ROUTE_STATE_NAMES) {
            const labels = { provider: route.provider, key_id: route.keyId, key_name: route.keyName, state: name };
            this.set(state.project(labels, ["provider", "key_id", "key_name", "state"], custom), route.state === name ? 1 : 0);
          }
        }
      },
    });
    this.keyRotations = counter("gw_key_rotation_events_total", "Provider key swaps after a 429, 401/403 or 402.", withCustom(["provider", "requested_model", "key_id", "key_name", "fail_reason"]));
    this.retries = histogram("gw_request_retries", "Retries per inference request (observed once per request).", base, RETRY_BUCKETS);
    this.firstToken = histogram("gw_stream_first_token_latency_seconds", "Time to the first streamed token, in seconds.", base, SECONDS_BUCKETS);
    this.interToken = histogram("gw_stream_inter_token_latency_seconds", "Time between streamed tokens, in seconds.", base, INTER_TOKEN_BUCKETS);
    this.mcpDuration = histogram(
      "gw_mcp_client_operation_duration_seconds",
      "MCP tool executions, in seconds; error_type is empty on success.",
      withCustom(["mcp_client", "mcp_tool_name", "mcp_method", "error_type", ...GOVERNANCE_LABELS]),
      SECONDS_BUCKETS,
    );
  }
}

/** One route as gw_route_state shows it. */
export interface RouteStateSample {
  provider: string;
  /** "" for a provider route. */
  keyId: string;
  keyName: string;
  state: string;
}

/** The states gw_route_state has a series for. */
const ROUTE_STATE_NAMES = ["healthy", "degraded", "failed", "recovering"] as const;

/** The state behind the two gauges, kept outside prom-client so it survives a registry rebuild. */
class StateGauges {
  /** label-key -> labels (own + custom) and the number in flight. */
  readonly active = new Map<string, { labels: Labels; value: number }>();
  readonly keyUp = new Map<string, { labels: Labels; value: number }>();
  /** Reads the load balancer's routes at scrape time; none until the inference state registers it. */
  routeStates: (() => Iterable<RouteStateSample>) | null = null;

  constructor(private readonly cap: () => LabelCap) {}

  /** The labels of `names` plus the current custom labels, capped. */
  project(labels: Labels, names: readonly string[], custom: readonly string[]): Labels {
    const out: Labels = {};
    const cap = this.cap();
    for (const name of names) out[name] = cap.admit(name, labels[name] ?? "");
    for (const name of custom) out[name] = cap.admit(name, labels[name] ?? "");
    return out;
  }
}

type Op = (m: MetricSet, labels: LabelMaker) => void;

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
class LabelMaker {
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

function governanceValues(g: GovernanceLabels | undefined): Labels {
  return {
    virtual_key_id: g?.virtualKeyId ?? "",
    virtual_key_name: g?.virtualKeyName ?? "",
    team_id: g?.teamId ?? "",
    team_name: g?.teamName ?? "",
    customer_id: g?.customerId ?? "",
    customer_name: g?.customerName ?? "",
    business_unit_id: g?.businessUnitId ?? "",
    business_unit_name: g?.businessUnitName ?? "",
  };
}

function hasNames(record: Readonly<Record<string, string>>): boolean {
  for (const _ in record) return true;
  return false;
}

/** The identity of a state gauge's series, whatever order its labels were built in. */
function stateKey(labels: Labels): string {
  let key = "";
  for (const name of Object.keys(labels).sort()) key = appendKey(appendKey(key, name), labels[name] as string);
  return key;
}

/** Keeps finite, non-negative observations; anything else would corrupt a histogram's sum. */
function finite(value: number): boolean {
  return Number.isFinite(value) && value >= 0;
}

/** The gateway's metrics and the typed API that records them. */
export class Metrics {
  private set: MetricSet;
  private cap: LabelCap;
  private labels: LabelMaker;
  private readonly state: StateGauges;
  /** The last up/down state queued per provider and key id, with the key name it was queued under. */
  private readonly lastKeyUp = new Map<string, Map<string, { name: string; up: boolean }>>();
  /** gw_active_requests state keys by method (no dimensions). */
  private readonly methodKeys = new Map<string, string>();
  private pending: Op[] = [];
  private scheduled = false;
  private droppedCount = 0;
  private readonly maxPending: number;
  private readonly userLabels: boolean;
  private readonly maxLabelValues: number;
  private readonly logger: Logger | undefined;
  private readonly recording: boolean;
  private readonly process: Registry | undefined;

  constructor(options: MetricsOptions = {}) {
    this.recording = options.recording ?? true;
    this.process = options.processMetrics === true ? createProcessRegistry() : undefined;
    this.userLabels = options.userLabelsEnabled ?? false;
    this.maxLabelValues = options.maxLabelValues ?? DEFAULT_MAX_LABEL_VALUES;
    this.maxPending = options.maxPending ?? 100_000;
    this.logger = options.logger;
    this.cap = new LabelCap(this.maxLabelValues);
    this.state = new StateGauges(() => this.cap);
    this.set = new MetricSet(this.usableLabels(options.customLabels ?? []), this.userLabels, this.state);
    this.labels = new LabelMaker(this.set, this.cap);
  }

  /** The registry to scrape now (a new one after the custom labels change). */
  get registry(): Registry {
    return this.set.registry;
  }

  /** The custom label names in effect. */
  get customLabels(): readonly string[] {
    return this.set.custom;
  }

  /** Records dropped because the queue was full. */
  get dropped(): number {
    return this.droppedCount;
  }

  /**
   * Switches to a new custom label list. An unchanged list is a no-op; otherwise every metric is
   * re-created in a fresh registry and counters and histograms restart from zero.
   */
  setCustomLabels(labels: readonly string[]): void {
    const next = this.usableLabels(labels);
    if (next.length === this.set.custom.length && next.every((l, i) => l === this.set.custom[i])) return;
    this.flush();
    this.cap = new LabelCap(this.maxLabelValues);
    this.set = new MetricSet(next, this.userLabels, this.state);
    this.labels = new LabelMaker(this.set, this.cap);
    this.logger?.info({ prometheus_labels: next }, "custom metric labels changed: metrics re-created, counters restart from zero");
  }

  /** Applies every queued record now (a scrape calls this first). */
  flush(): void {
    this.scheduled = false;
    const ops = this.pending;
    this.pending = [];
    for (const op of ops) {
      try {
        op(this.set, this.labels);
      } catch (err) {
        this.logger?.warn({ err }, "a metric record was dropped");
      }
    }
  }

  /** The exposition text of every metric (after a flush), the process metrics last when enabled. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    this.flush();
    const registry = this.set.registry;
    const own = await registry.metrics();
    if (this.process === undefined) return { contentType: registry.contentType, body: own };
    const separator = own === "" || own.endsWith("\n") ? "" : "\n";
    return { contentType: registry.contentType, body: `${own}${separator}${await this.process.metrics()}` };
  }

  private usableLabels(labels: readonly string[]): string[] {
    const out: string[] = [];
    for (const label of labels) {
      const problem = customLabelProblem(label);
      if (problem !== null || out.includes(label)) {
        this.logger?.warn({ label, problem: problem ?? "duplicate" }, "custom metric label skipped");
        continue;
      }
      out.push(label);
    }
    return out;
  }

  private enqueue(op: Op): void {
    if (!this.recording) return;
    if (this.pending.length >= this.maxPending) {
      this.droppedCount++;
      return;
    }
    this.pending.push(op);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** http_* metrics of one served request. */
  recordHttpRequest(s: HttpRequestSample): void {
    const custom = s.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => {
      const labels = l.http(s.path, s.method, s.status, custom);
      m.httpRequests.inc(labels);
      if (finite(s.durationS)) m.httpDuration.observe(labels, s.durationS);
      if (finite(s.reqBytes)) m.httpRequestSize.observe(labels, s.reqBytes);
      if (finite(s.resBytes)) m.httpResponseSize.observe(labels, s.resBytes);
    });
  }

  /** gw_routing_embedding_*: one embedding call for complexity tiers; `costUsd` null when the model has no price. */
  recordRoutingEmbedding(provider: string, model: string, phase: "request" | "warmup", costUsd: number | null): void {
    this.enqueue((m, l) => {
      const labels = l.own({ provider, model, phase }, NO_CUSTOM);
      m.routingEmbeddingRequests.inc(labels);
      if (costUsd !== null && finite(costUsd) && costUsd > 0) m.routingEmbeddingCost.inc(labels, costUsd);
    });
  }

  /** gw_mcp_client_operation_duration_seconds for one tool execution (mcp_method "tools/call"). */
  recordMcpToolCall(s: McpToolCallSample): void {
    const custom = s.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => {
      const labels = l.own({ mcp_client: s.mcpClient, mcp_tool_name: s.toolName, mcp_method: "tools/call", error_type: s.errorType, ...governanceValues(s.governance) }, custom);
      m.mcpDuration.observe(labels, finite(s.durationS) ? s.durationS : 0);
    });
  }

  /** gw_upstream_requests_total: one inference request, policy refusals (no provider call) included. */
  recordUpstreamRequest(base: BaseLabels, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => m.upstreamRequests.inc(l.base(base, c)));
  }

  /** gw_cache_hits_total: one request answered from the response cache. */
  recordCacheHit(base: BaseLabels, cacheType: CacheType, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => m.cacheHits.inc(l.baseWith(base, c, "cache_type", cacheType)));
  }

  /** gw_success_requests_total: one successful inference request. */
  recordSuccess(base: BaseLabels, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => m.successRequests.inc(l.base(base, c)));
  }

  /** gw_error_requests_total for a request's final error, selected_key_* emptied (docs/telemetry.md). */
  recordError(base: BaseLabels, statusCode: number, errorType: InferenceErrorType, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    const final = { ...base, selectedKeyId: "", selectedKeyName: "" };
    this.enqueue((m, l) => m.errorRequests.inc(l.base(final, c, { status_code: String(statusCode), error_type: errorType })));
  }

  /** gw_upstream_latency_seconds of one provider call. */
  recordUpstreamLatency(base: BaseLabels, seconds: number, isSuccess: boolean, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(seconds)) return;
    this.enqueue((m, l) => m.upstreamLatency.observe(l.baseWith(base, c, "is_success", isSuccess ? "true" : "false"), seconds));
  }

  /** gw_overhead_latency_microseconds: the gateway's own time, upstream excluded. */
  recordOverhead(base: BaseLabels, microseconds: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(microseconds)) return;
    this.enqueue((m, l) => m.overheadLatency.observe(l.base(base, c), microseconds));
  }

  /** gw_input_tokens_total and gw_output_tokens_total. */
  recordTokens(base: BaseLabels, input: number, output: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => {
      const labels = l.base(base, c);
      if (finite(input) && input > 0) m.inputTokens.inc(labels, input);
      if (finite(output) && output > 0) m.outputTokens.inc(labels, output);
    });
  }

  /** gw_cost_total, in USD. */
  recordCost(base: BaseLabels, usd: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(usd) || usd === 0) return;
    this.enqueue((m, l) => m.cost.inc(l.base(base, c), usd));
  }

  /** gw_request_retries: call once per request with its retry count. */
  recordRetries(base: BaseLabels, retries: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(retries)) return;
    this.enqueue((m, l) => m.retries.observe(l.base(base, c), retries));
  }

  /** gw_stream_first_token_latency_seconds. */
  recordFirstToken(base: BaseLabels, seconds: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(seconds)) return;
    this.enqueue((m, l) => m.firstToken.observe(l.base(base, c), seconds));
  }

  /** gw_stream_inter_token_latency_seconds: `count` events, the first `seconds` after the one before, the rest together with it. */
  recordInterTokens(base: BaseLabels, seconds: number, count: number, custom?: CustomLabelValues): void {
    const c = custom ?? base.custom ?? NO_CUSTOM;
    if (!finite(seconds) || count < 1) return;
    this.enqueue((m, l) => {
      const labels = l.base(base, c);
      m.interToken.observe(labels, seconds);
      if (count > 1) m.interToken.observe(labels, 0, count - 1);
    });
  }

  /** gw_key_rotation_events_total: one actual key swap. */
  recordKeyRotation(e: { provider: string; requestedModel: string; keyId: string; keyName: string; failReason: string }, custom?: CustomLabelValues): void {
    const c = custom ?? NO_CUSTOM;
    this.enqueue((m, l) =>
      m.keyRotations.inc(l.own({ provider: e.provider, requested_model: e.requestedModel, key_id: e.keyId, key_name: e.keyName, fail_reason: e.failReason }, c)),
    );
  }

  /** gw_active_requests +1; pair every call with activeRequestFinished with the same arguments. */
  activeRequestStarted(method: InferenceMethod, custom?: CustomLabelValues): void {
    this.moveActive(method, custom ?? NO_CUSTOM, 1);
  }

  /** gw_active_requests -1. */
  activeRequestFinished(method: InferenceMethod, custom?: CustomLabelValues): void {
    this.moveActive(method, custom ?? NO_CUSTOM, -1);
  }

  private moveActive(method: string, custom: CustomLabelValues, delta: number): void {
    this.enqueue(() => {
      // Without dimensions (the common case) the key needs no sorting, and is made once per method.
      const named = hasNames(custom);
      const key = named ? stateKey({ ...custom, method }) : this.methodKey(method);
      const entry = this.state.active.get(key);
      const value = (entry?.value ?? 0) + delta;
      if (value <= 0) this.state.active.delete(key);
      else if (entry !== undefined) entry.value = value;
      else this.state.active.set(key, { labels: { ...custom, method }, value });
    });
  }

  /** The state key of gw_active_requests for a method without dimensions. */
  private methodKey(method: string): string {
    let key = this.methodKeys.get(method);
    if (key === undefined) {
      key = appendKey(appendKey("", "method"), method);
      this.methodKeys.set(method, key);
    }
    return key;
  }

  /** gw_route_state reads `source` at each scrape (routes are state, not events; custom labels stay empty). */
  watchRouteStates(source: () => Iterable<RouteStateSample>): void {
    this.state.routeStates = source;
  }

  /**
   * gw_provider_key_up: 1 after a success, 0 after a failure. It is the state of a key, not of a
   * request, so its custom labels stay empty and one key keeps one series.
   */
  setProviderKeyUp(provider: string, keyId: string, keyName: string, up: boolean): void {
    // A key's state rarely changes: an unchanged one queues nothing, and is found without building a key.
    const keys = innerMap(this.lastKeyUp, provider);
    const last = keys.get(keyId);
    if (last !== undefined && last.name === keyName && last.up === up) return;
    keys.set(keyId, { name: keyName, up });
    const key = appendKey(appendKey(appendKey("", provider), keyId), keyName);
    this.enqueue(() => {
      this.state.keyUp.set(key, { labels: { provider, key_id: keyId, key_name: keyName }, value: up ? 1 : 0 });
    });
  }
}
