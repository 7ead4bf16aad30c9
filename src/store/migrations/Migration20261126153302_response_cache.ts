import { Migration } from '@mikro-orm/migrations';

export class Migration20261126153302_response_cache extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "response_cache_entry" ("key" varchar(255) not null, "namespace" varchar(255) not null, "params_hash" varchar(255) not null, "kind" varchar(255) not null, "answer" text not null, "embedding" double precision[] null, "size_bytes" int not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, constraint "response_cache_entry_pkey" primary key ("key"));`);
    this.addSql(`create index "response_cache_entry_expires_at_index" on "response_cache_entry" ("expires_at");`);
    this.addSql(`create index "response_cache_entry_namespace_params_hash_index" on "response_cache_entry" ("namespace", "params_hash");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "response_cache_entry" cascade;`);
  }

}
