import { Migration } from '@mikro-orm/migrations';

export class Migration20261126130000_virtual_key_mcp_configs_presence extends Migration {

  // NULL is a key without mcp_configs (every client a caller without a key sees), unlike [] (no tools).
  override async up(): Promise<void> {
    this.addSql(`alter table "virtual_key" alter column "mcp_configs" drop not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`update "virtual_key" set "mcp_configs" = '[]' where "mcp_configs" is null;`);
    this.addSql(`alter table "virtual_key" alter column "mcp_configs" set not null;`);
  }

}
