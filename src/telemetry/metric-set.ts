/**
 * The families the gateway exposes: their names, help texts, label names and buckets, registered in one
 * prom-client Registry for one custom label list. prom-client fixes a metric's label names at
 * registration, so a new custom label list takes a new MetricSet.
 */
import { Gauge, Registry, type Metric } from "prom-client";
import { CounterFamily, HistogramFamily } from "./metric-families.js";
import { BASE_LABELS, GOVERNANCE_LABELS, HTTP_LABELS, ROUTE_STATE_NAMES, USER_LABELS } from "./metric-labels.js";
import type { StateGauges } from "./state-gauges.js";

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
export class MetricSet {
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
  readonly mcpToolDefinitionChanges: CounterFamily;
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
    this.mcpToolDefinitionChanges = counter(
      "gw_mcp_tool_definition_changes_total",
      "Pinned MCP tool definitions found changed at discovery (each quarantines its tool until approved).",
      withCustom(["mcp_client"]),
    );
  }
}
