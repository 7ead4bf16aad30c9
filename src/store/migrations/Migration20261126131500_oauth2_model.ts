import { Migration } from '@mikro-orm/migrations';

export class Migration20261126131500_oauth2_model extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "oauth2_model" ("key" varchar(255) not null, "kind" varchar(255) not null, "payload" text not null, "grant_id" varchar(255) null, "uid" varchar(255) null, "expires_at" timestamptz null, "created_at" timestamptz not null, constraint "oauth2_model_pkey" primary key ("key"));`);
    this.addSql(`create index "oauth2_model_kind_index" on "oauth2_model" ("kind");`);
    this.addSql(`create index "oauth2_model_grant_id_index" on "oauth2_model" ("grant_id");`);
    this.addSql(`create index "oauth2_model_uid_index" on "oauth2_model" ("uid");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "oauth2_model" cascade;`);
  }

}
