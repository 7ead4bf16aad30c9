// Initial schema: MCP clients (headers encrypted), admin sessions, settings.
import { Migration } from '@mikro-orm/migrations';

export class Migration20261122041715_initial extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "admin_session" ("token_hash" varchar(255) not null, "username" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, constraint "admin_session_pkey" primary key ("token_hash"));`);
    this.addSql(`create index "admin_session_expires_at_index" on "admin_session" ("expires_at");`);

    this.addSql(`create table "mcp_client" ("id" uuid not null, "name" varchar(255) not null, "connection_type" text check ("connection_type" in ('http', 'sse', 'stdio')) not null, "connection_string" text null, "stdio_config" jsonb null, "auth_type" text check ("auth_type" in ('none', 'headers', 'oauth', 'per_user_headers', 'per_user_oauth', 'token_exchange')) not null, "headers" text not null, "per_user_header_keys" jsonb not null, "tools_to_execute" jsonb not null, "tools_to_auto_execute" jsonb not null, "tool_sync_interval" int not null, "needs_session_stickiness" boolean null, "disabled" boolean not null, "tools" jsonb not null, "source" text check ("source" in ('api', 'config')) not null, "verified" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "mcp_client_pkey" primary key ("id"));`);
    this.addSql(`alter table "mcp_client" add constraint "mcp_client_name_unique" unique ("name");`);

    this.addSql(`create table "setting" ("key" varchar(255) not null, "value" jsonb not null, "updated_at" timestamptz not null, constraint "setting_pkey" primary key ("key"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "admin_session" cascade;`);

    this.addSql(`drop table if exists "mcp_client" cascade;`);

    this.addSql(`drop table if exists "setting" cascade;`);
  }

}
