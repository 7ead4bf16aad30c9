import { Migration } from '@mikro-orm/migrations';

export class Migration20261126130000_mcp_code_mode_client extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "mcp_client" add column "is_code_mode_client" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "mcp_client" drop column "is_code_mode_client";`);
  }

}
