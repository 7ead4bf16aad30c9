import { Migration } from '@mikro-orm/migrations';

export class Migration20261126184055_shared_counter extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "shared_counter" ("counter_key" varchar(255) not null, "window_start" bigint not null, "window_end" bigint not null, "used" double precision not null, "last_grant" double precision not null, "updated_at" timestamptz not null default now(), constraint "shared_counter_pkey" primary key ("counter_key"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "shared_counter" cascade;`);
  }

}
