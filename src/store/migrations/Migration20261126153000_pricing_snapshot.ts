import { Migration } from '@mikro-orm/migrations';

export class Migration20261126153000_pricing_snapshot extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "pricing_snapshot" ("id" varchar(255) not null, "source_url" text not null, "entries" jsonb not null, "models_count" int not null, "synced_at" timestamptz not null, constraint "pricing_snapshot_pkey" primary key ("id"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "pricing_snapshot" cascade;`);
  }

}
