import { Migration } from '@mikro-orm/migrations';

export class Migration20261122071136_per_user_credentials extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "mcp_user_credential" ("id" uuid not null, "client_id" uuid not null, "identity_kind" text check ("identity_kind" in ('user', 'vk', 'session')) not null, "identity_id" text not null, "values" text not null, "header_keys" jsonb not null, "status" text check ("status" in ('active', 'needs_update', 'orphaned')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "mcp_user_credential_pkey" primary key ("id"));`);
    this.addSql(`create index "mcp_user_credential_client_index" on "mcp_user_credential" ("client_id");`);
    this.addSql(`alter table "mcp_user_credential" add constraint "mcp_user_credential_identity_unique" unique ("client_id", "identity_kind", "identity_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "mcp_user_credential" cascade;`);
  }

}
