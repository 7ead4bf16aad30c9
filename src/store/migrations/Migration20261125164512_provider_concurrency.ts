import { Migration } from '@mikro-orm/migrations';

export class Migration20261125164512_provider_concurrency extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "provider" add column "concurrency_and_buffer_size" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "provider" drop column "concurrency_and_buffer_size";`);
  }

}
