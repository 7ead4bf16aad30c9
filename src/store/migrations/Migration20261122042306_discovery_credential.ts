import { Migration } from '@mikro-orm/migrations';

export class Migration20261122042306_discovery_credential extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "mcp_client" add column "discovery_headers" text null, add column "discovery_status" text check ("discovery_status" in ('active', 'needs_update')) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "mcp_client" drop column "discovery_headers", drop column "discovery_status";`);
  }

}
