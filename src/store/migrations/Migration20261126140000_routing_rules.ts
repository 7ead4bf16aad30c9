import { Migration } from '@mikro-orm/migrations';

export class Migration20261126140000_routing_rules extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "routing_rule" ("id" varchar(255) not null, "name" varchar(255) not null, "description" text not null, "enabled" boolean not null, "priority" int not null, "scope" varchar(255) not null, "scope_id" varchar(255) not null, "cel_expression" text not null, "targets" jsonb not null, "fallbacks" jsonb not null, "chain_rule" boolean not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "routing_rule_pkey" primary key ("id"));`);
    this.addSql(`alter table "routing_rule" add constraint "routing_rule_scope_name_unique" unique ("scope", "scope_id", "name");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "routing_rule" cascade;`);
  }

}
