/**
 * The vocabulary of the gateway's metrics: the label names the families declare and the types callers
 * give label values in. A series is exposed with its labels in the order its values were built, so the
 * value builders (governanceValues here, the LabelMaker's base values) follow these lists.
 */
import type { Labels } from "./metric-families.js";
import type { TraceIdSource } from "./tracing.js";

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
/** The `complexity_tier` label. */
export type ComplexityTier = "SIMPLE" | "MEDIUM" | "COMPLEX";
/** The `complexity_mechanism` label: what decided the complexity tier. */
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

/** Labels of the http_* metrics. */
export const HTTP_LABELS = ["path", "method", "status"] as const;
/** The base label set of the upstream provider metrics. */
export const BASE_LABELS = [
  "provider", "model", "alias", "method", "virtual_key_id", "virtual_key_name", "routing_engine_used",
  "routing_rule_id", "routing_rule_name", "complexity_tier", "complexity_mechanism", "selected_key_id",
  "selected_key_name", "fallback_index", "team_id", "team_name", "customer_id", "customer_name",
] as const;
/** Appended to the base label set when user labels are enabled. */
export const USER_LABELS = ["user_id", "user_name"] as const;
/** The governance labels of the MCP metric. */
export const GOVERNANCE_LABELS = [
  "virtual_key_id", "virtual_key_name", "team_id", "team_name", "customer_id", "customer_name",
  "business_unit_id", "business_unit_name",
] as const;

/** The states gw_route_state has a series for. */
export const ROUTE_STATE_NAMES = ["healthy", "degraded", "failed", "recovering"] as const;

/** The label values of `g`, "" for each one omitted. */
export function governanceValues(g: GovernanceLabels | undefined): Labels {
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
