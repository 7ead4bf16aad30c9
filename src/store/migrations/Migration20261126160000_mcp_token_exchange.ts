import { Migration } from '@mikro-orm/migrations';

export class Migration20261126160000_mcp_token_exchange extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "mcp_client" add column "token_exchange" jsonb null, add column "token_exchange_client_secret" text null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "mcp_client" drop column "token_exchange", drop column "token_exchange_client_secret";`);
  }

}
