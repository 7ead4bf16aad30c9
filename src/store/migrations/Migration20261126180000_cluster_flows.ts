import { Migration } from '@mikro-orm/migrations';

/** Tables whose changes other nodes take up besides the configuration: table, key column. */
const NOTIFYING_TABLES: ReadonlyArray<[string, string]> = [
  // A credential stored, updated or revoked on one node reaches the cache of every other node.
  ["mcp_user_credential", "id"],
  // The node that downloads the pricing datasheet stores it; the others reload it.
  ["pricing_snapshot", "id"],
  // An SSO session opened or ended on one node is known or forgotten by every node.
  ["sso_session", "id_hash"],
];

export class Migration20261126180000_cluster_flows extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "mcp_user_flow" ("id_hash" varchar(255) not null, "kind" text check ("kind" in ('headers', 'oauth')) not null, "client_id" uuid not null, "identity_kind" text check ("identity_kind" in ('user', 'vk', 'session')) not null, "identity_id" text not null, "identity_name" text not null, "token_auth" boolean not null, "completed" boolean not null, "temp_token_hash" text null, "state_hash" text null, "error" text null, "secrets" text not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, constraint "mcp_user_flow_pkey" primary key ("id_hash"));`);
    this.addSql(`create index "mcp_user_flow_client_index" on "mcp_user_flow" ("client_id");`);
    this.addSql(`create index "mcp_user_flow_expires_at_index" on "mcp_user_flow" ("expires_at");`);
    this.addSql(`alter table "mcp_user_flow" add constraint "mcp_user_flow_state_unique" unique ("state_hash");`);
    this.addSql(`create table "sso_login" ("state_hash" varchar(255) not null, "secrets" text not null, "return_to" text not null, "redirect_uri" text not null, "expires_at" timestamptz not null, constraint "sso_login_pkey" primary key ("state_hash"));`);
    this.addSql(`create index "sso_login_expires_at_index" on "sso_login" ("expires_at");`);
    this.addSql(`create table "sso_session" ("id_hash" varchar(255) not null, "user" jsonb not null, "secrets" text not null, "expires_at" timestamptz not null, constraint "sso_session_pkey" primary key ("id_hash"));`);
    this.addSql(`create index "sso_session_expires_at_index" on "sso_session" ("expires_at");`);
    for (const [table, key] of NOTIFYING_TABLES) {
      this.addSql(`create trigger "${table}_notify_change" after insert or update or delete on "${table}" for each row execute function "gw_notify_config_change"('${key}');`);
    }
  }

  override async down(): Promise<void> {
    for (const [table] of NOTIFYING_TABLES) this.addSql(`drop trigger if exists "${table}_notify_change" on "${table}";`);
    this.addSql(`drop table if exists "mcp_user_flow" cascade;`);
    this.addSql(`drop table if exists "sso_login" cascade;`);
    this.addSql(`drop table if exists "sso_session" cascade;`);
  }

}
