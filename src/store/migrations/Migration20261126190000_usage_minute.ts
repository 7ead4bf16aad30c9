import { Migration } from '@mikro-orm/migrations';

export class Migration20261126190000_usage_minute extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "usage_minute" ("node_id" varchar(255) not null, "minute" timestamptz not null, "requests" int not null, "errors" int not null, "input_tokens" double precision not null, "output_tokens" double precision not null, "cost_usd" double precision not null, "latency" jsonb not null, "keys" jsonb not null, "models" jsonb not null, "tools" jsonb not null, constraint "usage_minute_pkey" primary key ("node_id", "minute"));`);
    this.addSql(`create index "usage_minute_minute_index" on "usage_minute" ("minute");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "usage_minute" cascade;`);
  }

}
