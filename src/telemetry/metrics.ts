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
import type { Registry } from "prom-client";
import { createProcessRegistry } from "./process-metrics.js";
import type { Logger } from "./logger.js";
import { customLabelProblem } from "./label-names.js";
import { DEFAULT_MAX_LABEL_VALUES, LabelCap } from "./label-cap.js";
import type { FamilyGroup } from "./family-group.js";
import { LabelMaker } from "./label-maker.js";
import { appendKey, type Labels } from "./metric-families.js";
import {
  governanceValues,
  type BaseLabels,
  type CacheType,
  type CustomLabelValues,
  type GovernanceLabels,
  type InferenceErrorType,
  type InferenceMethod,
  type McpErrorType,
} from "./metric-labels.js";
import { MetricSet } from "./metric-set.js";
import { StateGauges, type RouteStateSample } from "./state-gauges.js";
import { innerMap } from "./nested-map.js";

// The vocabulary the record* methods take, so a caller imports the facade's whole API from this module.
export type {
  BaseLabels,
  CacheType,
  ComplexityMechanism,
  ComplexityTier,
  CustomLabelValues,
  GovernanceLabels,
  InferenceErrorType,
  InferenceMethod,
  McpErrorType,
  RoutingEngine,
} from "./metric-labels.js";
export type { RouteStateSample } from "./state-gauges.js";

/** Custom label values of a record without a request (every custom label ""). */
const NO_CUSTOM: CustomLabelValues = Object.freeze({});

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
  /** The tool of a tools/call; "" for other methods. */
  toolName: string;
  /** The JSON-RPC method; absent: tools/call. One the MCP protocol does not define is labelled "other". */
  mcpMethod?: string;
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

/** A queued record; it is handed the families and label maker in effect when the queue is flushed. */
type Op = (m: MetricSet, labels: LabelMaker) => void;

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

/** The client-to-server requests of the MCP protocol: a relayed method outside them is labelled "other", so a caller cannot grow the label set. */
const MCP_METHODS: ReadonlySet<string> = new Set([
  "tools/call", "tools/list", "resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
  "prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "ping",
]);

function methodLabel(method: string | undefined): string {
  if (method === undefined) return "tools/call";
  return MCP_METHODS.has(method) ? method : "other";
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
  private readonly groups: FamilyGroup[] = [];

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
    for (const group of this.groups) group.install(this.set.registry, this.set.custom, this.cap);
    this.logger?.info({ prometheus_labels: next }, "custom metric labels changed: metrics re-created, counters restart from zero");
  }

  /** Adds a feature's own families to the exposition, now and in every registry a change of the custom labels makes. */
  addGroup(group: FamilyGroup): void {
    this.groups.push(group);
    group.install(this.set.registry, this.set.custom, this.cap);
  }

  /** Runs `record` off the request path, in the batch a scrape applies first; dropped while recording is off. */
  defer(record: () => void): void {
    this.enqueue(record);
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

  /** gw_mcp_client_operation_duration_seconds for one MCP request (a tool execution unless it names another method). */
  recordMcpToolCall(s: McpToolCallSample): void {
    const custom = s.custom ?? NO_CUSTOM;
    this.enqueue((m, l) => {
      const labels = l.own({ mcp_client: s.mcpClient, mcp_tool_name: s.toolName, mcp_method: methodLabel(s.mcpMethod), error_type: s.errorType, ...governanceValues(s.governance) }, custom);
      m.mcpDuration.observe(labels, finite(s.durationS) ? s.durationS : 0);
    });
  }

  /** gw_mcp_tool_definition_changes_total: a pinned tool's definition found changed at discovery. */
  recordMcpToolDefinitionChange(mcpClient: string): void {
    this.enqueue((m, l) => m.mcpToolDefinitionChanges.inc(l.own({ mcp_client: mcpClient }, NO_CUSTOM)));
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
