import { Migration } from '@mikro-orm/migrations';

export class Migration20261203125555_guardrail extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "guardrail" ("id" varchar(255) not null, "name" varchar(255) not null, "description" text not null, "enabled" boolean not null, "stages" jsonb not null, "scope" varchar(255) not null, "scope_id" varchar(255) not null, "when_expression" text not null, "check" jsonb not null, "secret_headers" text null, "action" varchar(255) not null, "redaction" jsonb null, "on_error" varchar(255) not null, "timeout" varchar(255) not null, "sampling_rate" double precision not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "guardrail_pkey" primary key ("id"));`);
    this.addSql(`alter table "guardrail" add constraint "guardrail_name_unique" unique ("name");`);
    // Nodes keep the guardrails in memory: a change on one node reaches the others like any configuration row.
    this.addSql(`create trigger "guardrail_notify_change" after insert or update or delete on "guardrail" for each row execute function "gw_notify_config_change"('id', 'updated_at');`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "guardrail_notify_change" on "guardrail";`);
    this.addSql(`drop table if exists "guardrail" cascade;`);
  }

}
