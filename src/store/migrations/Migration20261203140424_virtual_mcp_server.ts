import { Migration } from '@mikro-orm/migrations';

export class Migration20261203140424_virtual_mcp_server extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "virtual_mcp_server" ("name" varchar(255) not null, "description" text not null, "members" jsonb not null, "source" text check ("source" in ('api', 'config')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "virtual_mcp_server_pkey" primary key ("name"));`);
    // Nodes keep the virtual servers in memory: a change on one node reaches the others like any configuration row.
    this.addSql(`create trigger "virtual_mcp_server_notify_change" after insert or update or delete on "virtual_mcp_server" for each row execute function "gw_notify_config_change"('name', 'updated_at');`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "virtual_mcp_server_notify_change" on "virtual_mcp_server";`);
    this.addSql(`drop table if exists "virtual_mcp_server" cascade;`);
  }

}
