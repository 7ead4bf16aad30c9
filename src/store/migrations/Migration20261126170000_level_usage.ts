import { Migration } from '@mikro-orm/migrations';

export class Migration20261126170000_level_usage extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "level_usage_counter" ("owner_key" varchar(255) not null, "budget" jsonb null, "requests" jsonb null, "tokens" jsonb null, "updated_at" timestamptz not null, constraint "level_usage_counter_pkey" primary key ("owner_key"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "level_usage_counter" cascade;`);
  }

}
