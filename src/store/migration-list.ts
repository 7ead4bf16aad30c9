/**
 * Every committed migration, imported statically so a bundled build carries them: MikroORM then never
 * looks for migration files on disk at run time. Loaded only when a migration is to run (loadMigrator). A
 * migration written by `npm run migration:create` is added here and its name to migration-names.ts (a unit
 * test checks both lists against the migrations directory).
 */
import type { MigrationObject } from "@mikro-orm/core";
import { Migration20261122041715_initial } from "./migrations/Migration20261122041715_initial.js";
import { Migration20261122042306_discovery_credential } from "./migrations/Migration20261122042306_discovery_credential.js";
import { Migration20261122063835_inference } from "./migrations/Migration20261122063835_inference.js";
import { Migration20261122071136_per_user_credentials } from "./migrations/Migration20261122071136_per_user_credentials.js";
import { Migration20261125164512_provider_concurrency } from "./migrations/Migration20261125164512_provider_concurrency.js";
import { Migration20261126121500_mcp_allow_on_all_virtual_keys } from "./migrations/Migration20261126121500_mcp_allow_on_all_virtual_keys.js";
import { Migration20261126121644_oauth } from "./migrations/Migration20261126121644_oauth.js";
import { Migration20261126130000_mcp_code_mode_client } from "./migrations/Migration20261126130000_mcp_code_mode_client.js";
import { Migration20261126130000_virtual_key_mcp_configs_presence } from "./migrations/Migration20261126130000_virtual_key_mcp_configs_presence.js";
import { Migration20261126131500_oauth2_model } from "./migrations/Migration20261126131500_oauth2_model.js";
import { Migration20261126140000_governance_hierarchy } from "./migrations/Migration20261126140000_governance_hierarchy.js";
import { Migration20261126153000_pricing_snapshot } from "./migrations/Migration20261126153000_pricing_snapshot.js";
import { Migration20261126153302_response_cache } from "./migrations/Migration20261126153302_response_cache.js";
import { Migration20261126160000_cluster } from "./migrations/Migration20261126160000_cluster.js";
import { Migration20261126160000_mcp_token_exchange } from "./migrations/Migration20261126160000_mcp_token_exchange.js";
import { Migration20261126170000_level_usage } from "./migrations/Migration20261126170000_level_usage.js";
import { Migration20261126180000_cluster_flows } from "./migrations/Migration20261126180000_cluster_flows.js";
import { Migration20261126184055_shared_counter } from "./migrations/Migration20261126184055_shared_counter.js";
import { Migration20261126190000_usage_minute } from "./migrations/Migration20261126190000_usage_minute.js";
import { Migration20261126200000_provider_key_backoff } from "./migrations/Migration20261126200000_provider_key_backoff.js";
import { Migration20261203100000_admin_session_notify } from "./migrations/Migration20261203100000_admin_session_notify.js";
import { Migration20261203125555_guardrail } from "./migrations/Migration20261203125555_guardrail.js";
import { Migration20261203140424_virtual_mcp_server } from "./migrations/Migration20261203140424_virtual_mcp_server.js";
import { Migration20261203150000_mcp_tool_pinning } from "./migrations/Migration20261203150000_mcp_tool_pinning.js";

/**
 * The migrations in the order they apply; each name is its file name without the extension, as stored in
 * mikro_orm_migrations. The names are spelled out rather than read from `class.name`: a bundler may rename
 * a class to keep its names apart, and a renamed migration would look pending to every existing database.
 */
export const MIGRATIONS: readonly MigrationObject[] = [
  { name: "Migration20261122041715_initial", class: Migration20261122041715_initial },
  { name: "Migration20261122042306_discovery_credential", class: Migration20261122042306_discovery_credential },
  { name: "Migration20261122063835_inference", class: Migration20261122063835_inference },
  { name: "Migration20261122071136_per_user_credentials", class: Migration20261122071136_per_user_credentials },
  { name: "Migration20261125164512_provider_concurrency", class: Migration20261125164512_provider_concurrency },
  { name: "Migration20261126121500_mcp_allow_on_all_virtual_keys", class: Migration20261126121500_mcp_allow_on_all_virtual_keys },
  { name: "Migration20261126121644_oauth", class: Migration20261126121644_oauth },
  { name: "Migration20261126130000_mcp_code_mode_client", class: Migration20261126130000_mcp_code_mode_client },
  { name: "Migration20261126130000_virtual_key_mcp_configs_presence", class: Migration20261126130000_virtual_key_mcp_configs_presence },
  { name: "Migration20261126131500_oauth2_model", class: Migration20261126131500_oauth2_model },
  { name: "Migration20261126140000_governance_hierarchy", class: Migration20261126140000_governance_hierarchy },
  { name: "Migration20261126153000_pricing_snapshot", class: Migration20261126153000_pricing_snapshot },
  { name: "Migration20261126153302_response_cache", class: Migration20261126153302_response_cache },
  { name: "Migration20261126160000_cluster", class: Migration20261126160000_cluster },
  { name: "Migration20261126160000_mcp_token_exchange", class: Migration20261126160000_mcp_token_exchange },
  { name: "Migration20261126170000_level_usage", class: Migration20261126170000_level_usage },
  { name: "Migration20261126180000_cluster_flows", class: Migration20261126180000_cluster_flows },
  { name: "Migration20261126184055_shared_counter", class: Migration20261126184055_shared_counter },
  { name: "Migration20261126190000_usage_minute", class: Migration20261126190000_usage_minute },
  { name: "Migration20261126200000_provider_key_backoff", class: Migration20261126200000_provider_key_backoff },
  { name: "Migration20261203100000_admin_session_notify", class: Migration20261203100000_admin_session_notify },
  { name: "Migration20261203125555_guardrail", class: Migration20261203125555_guardrail },
  { name: "Migration20261203140424_virtual_mcp_server", class: Migration20261203140424_virtual_mcp_server },
  { name: "Migration20261203150000_mcp_tool_pinning", class: Migration20261203150000_mcp_tool_pinning },
];
