import { Migration } from '@mikro-orm/migrations';

export class Migration20261126121644_oauth extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "mcp_oauth_credential" ("id" uuid not null, "client_id" uuid not null, "status" text check ("status" in ('pending', 'authorized', 'failed', 'revoked')) not null, "state_hash" text null, "redirect_uri" text not null, "authorization_server_url" text null, "server_metadata" jsonb null, "resource" text null, "secrets" text not null, "token_expires_at" timestamptz null, "token_scopes" jsonb not null, "error" text null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "updated_at" timestamptz not null, constraint "mcp_oauth_credential_pkey" primary key ("id"));`);
    this.addSql(`create index "mcp_oauth_credential_client_index" on "mcp_oauth_credential" ("client_id");`);
    this.addSql(`alter table "mcp_oauth_credential" add constraint "mcp_oauth_credential_state_unique" unique ("state_hash");`);

    this.addSql(`alter table "mcp_client" add column "oauth_config" jsonb null, add column "oauth_client_secret" text null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "mcp_oauth_credential" cascade;`);

    this.addSql(`alter table "mcp_client" drop column "oauth_config", drop column "oauth_client_secret";`);
  }

}
