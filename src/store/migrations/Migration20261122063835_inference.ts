import { Migration } from '@mikro-orm/migrations';

export class Migration20261122063835_inference extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "provider" ("name" varchar(255) not null, "keys" text not null, "network_config" jsonb not null, "listed_models" jsonb not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "provider_pkey" primary key ("name"));`);

    this.addSql(`create table "usage_counter" ("virtual_key_id" varchar(255) not null, "provider" varchar(255) not null, "budgets" jsonb not null, "tokens" jsonb null, "updated_at" timestamptz not null, constraint "usage_counter_pkey" primary key ("virtual_key_id", "provider"));`);

    this.addSql(`create table "virtual_key" ("id" varchar(255) not null, "name" varchar(255) not null, "value" text not null, "value_hash" varchar(255) not null, "is_active" boolean not null, "provider_configs" jsonb not null, "mcp_configs" jsonb not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "virtual_key_pkey" primary key ("id"));`);
    this.addSql(`alter table "virtual_key" add constraint "virtual_key_name_unique" unique ("name");`);
    this.addSql(`alter table "virtual_key" add constraint "virtual_key_value_hash_unique" unique ("value_hash");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "provider" cascade;`);

    this.addSql(`drop table if exists "usage_counter" cascade;`);

    this.addSql(`drop table if exists "virtual_key" cascade;`);
  }

}
