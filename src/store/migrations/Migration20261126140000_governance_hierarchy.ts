import { Migration } from '@mikro-orm/migrations';

export class Migration20261126140000_governance_hierarchy extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "routing_rule" ("id" varchar(255) not null, "name" varchar(255) not null, "description" text not null, "enabled" boolean not null, "priority" int not null, "scope" varchar(255) not null, "scope_id" varchar(255) not null, "cel_expression" text not null, "targets" jsonb not null, "fallbacks" jsonb not null, "chain_rule" boolean not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "routing_rule_pkey" primary key ("id"));`);
    this.addSql(`alter table "routing_rule" add constraint "routing_rule_scope_name_unique" unique ("scope", "scope_id", "name");`);
    this.addSql(`create table "governance_group" ("id" varchar(255) not null, "kind" text check ("kind" in ('business_unit', 'customer', 'team')) not null, "name" varchar(255) not null, "parent_id" varchar(255) not null, "budget" jsonb null, "rate_limit" jsonb null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "governance_group_pkey" primary key ("id"));`);
    this.addSql(`alter table "governance_group" add constraint "governance_group_kind_name_unique" unique ("kind", "name");`);
    this.addSql(`alter table "virtual_key" add column "limits" jsonb not null default '{}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "routing_rule" cascade;`);
    this.addSql(`drop table if exists "governance_group" cascade;`);
    this.addSql(`alter table "virtual_key" drop column "limits";`);
  }

}
