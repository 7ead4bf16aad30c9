import { Migration } from '@mikro-orm/migrations';

export class Migration20261203150000_mcp_tool_pinning extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "mcp_client" add column "tool_pinning" boolean not null default false, add column "tool_pins" jsonb not null default '{}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "mcp_client" drop column "tool_pinning", drop column "tool_pins";`);
  }

}
