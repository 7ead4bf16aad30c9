import { Migration } from '@mikro-orm/migrations';

export class Migration20261203100000_admin_session_notify extends Migration {

  override async up(): Promise<void> {
    // Nodes cache verified admin sessions: a logout (or an expired session removed) on one node must reach
    // the caches of the others, which drop the session as the notification arrives.
    this.addSql(`create trigger "admin_session_notify_change" after delete on "admin_session" for each row execute function "gw_notify_config_change"('token_hash');`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "admin_session_notify_change" on "admin_session";`);
  }

}
