import { Migration } from '@mikro-orm/migrations';

export class Migration20261126121500_mcp_allow_on_all_virtual_keys extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "mcp_client" add column "allow_on_all_virtual_keys" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "mcp_client" drop column "allow_on_all_virtual_keys";`);
  }

}
