/**
 * The names of the committed migrations in the order they apply, each its file name without the
 * extension, as stored in mikro_orm_migrations. Kept apart from the migrations themselves so a start can
 * tell whether anything is pending without loading the migrator (a unit test checks the two lists agree).
 */
export const MIGRATION_NAMES: readonly string[] = [
  "Migration20261122041715_initial",
  "Migration20261122042306_discovery_credential",
  "Migration20261122063835_inference",
  "Migration20261122071136_per_user_credentials",
  "Migration20261125164512_provider_concurrency",
  "Migration20261126121500_mcp_allow_on_all_virtual_keys",
  "Migration20261126121644_oauth",
  "Migration20261126130000_mcp_code_mode_client",
  "Migration20261126130000_virtual_key_mcp_configs_presence",
  "Migration20261126131500_oauth2_model",
  "Migration20261126140000_governance_hierarchy",
  "Migration20261126153000_pricing_snapshot",
  "Migration20261126153302_response_cache",
  "Migration20261126160000_cluster",
  "Migration20261126160000_mcp_token_exchange",
  "Migration20261126170000_level_usage",
  "Migration20261126180000_cluster_flows",
  "Migration20261126184055_shared_counter",
  "Migration20261126190000_usage_minute",
  "Migration20261126200000_provider_key_backoff",
  "Migration20261203100000_admin_session_notify",
  "Migration20261203125555_guardrail",
  "Migration20261203140424_virtual_mcp_server",
  "Migration20261203150000_mcp_tool_pinning",
];
