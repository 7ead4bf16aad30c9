/** Rules for custom metric label names (client.prometheus_labels, x-gw-dim-<label>). */

/** Labels the gateway's own metrics already use; a custom label may not take one of these names. */
export const RESERVED_LABELS: ReadonlySet<string> = new Set([
  "path", "method", "status", "provider", "model", "alias", "virtual_key_id", "virtual_key_name",
  "routing_engine_used", "routing_rule_id", "routing_rule_name", "complexity_tier", "complexity_mechanism",
  "selected_key_id", "selected_key_name", "fallback_index", "team_id", "team_name", "customer_id",
  "customer_name", "business_unit_id", "business_unit_name", "user_id", "user_name", "status_code",
  "error_type", "is_success", "overhead_component", "cache_type", "key_id", "key_name", "requested_model",
  "fail_reason", "phase", "mcp_client", "mcp_tool_name", "mcp_method", "le", "quantile", "job", "instance",
]);

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Returns why a custom label name is refused, or null when it is fine. */
export function customLabelProblem(name: string): string | null {
  if (!LABEL_NAME.test(name)) return `"${name}" is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)`;
  if (name.startsWith("__")) return `"${name}" starts with "__", which Prometheus reserves`;
  if (RESERVED_LABELS.has(name)) return `"${name}" is reserved by the gateway's own metrics`;
  return null;
}
