import { Migration } from '@mikro-orm/migrations';

export class Migration20261126200000_provider_key_backoff extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "provider_key_backoff" ("id" varchar(255) not null, "provider" text not null, "key_id" text not null, "until_at" bigint not null, constraint "provider_key_backoff_pkey" primary key ("id"));`);
    // A backoff one node learns from a 429 reaches every other node's key selection.
    this.addSql(`create trigger "provider_key_backoff_notify_change" after insert or update or delete on "provider_key_backoff" for each row execute function "gw_notify_config_change"('id');`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "provider_key_backoff_notify_change" on "provider_key_backoff";`);
    this.addSql(`drop table if exists "provider_key_backoff" cascade;`);
  }

}
