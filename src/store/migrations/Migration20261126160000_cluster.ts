import { Migration } from '@mikro-orm/migrations';

/** Configuration tables whose changes other nodes take up: table, key column, columns whose change alone is no config change. */
const NOTIFYING_TABLES: ReadonlyArray<[string, string, ...string[]]> = [
  ["mcp_client", "id", "updated_at", "tools"],
  ["provider", "name", "updated_at"],
  ["virtual_key", "id", "updated_at"],
  ["routing_rule", "id", "updated_at"],
  ["governance_group", "id", "updated_at"],
  ["setting", "key", "updated_at"],
];

export class Migration20261126160000_cluster extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "gateway_node" ("id" varchar(255) not null, "address" varchar(255) not null, "version" varchar(255) not null, "started_at" timestamptz not null, "heartbeat_at" timestamptz not null, constraint "gateway_node_pkey" primary key ("id"));`);
    this.addSql(`create index "gateway_node_heartbeat_at_index" on "gateway_node" ("heartbeat_at");`);
    this.addSql(`create table "encryption_key_check" ("id" int not null, "sealed" text not null, constraint "encryption_key_check_pkey" primary key ("id"));`);
    this.addSql(`create table "mcp_client_node_state" ("client_id" varchar(255) not null, "node_id" varchar(255) not null, "state" varchar(255) not null, "last_failure" text null, "tools_count" int not null, "updated_at" timestamptz not null, constraint "mcp_client_node_state_pkey" primary key ("client_id", "node_id"));`);
    // Every committed configuration change tells the other nodes {entity, id}; the channel is named after
    // the schema, so gateways on different schemas of one database never hear each other. The origin is the
    // writing connection's application_name, which lets a node skip its own changes.
    this.addSql(`create function "gw_notify_config_change"() returns trigger language plpgsql as $$
declare
  row_id text;
begin
  if tg_op = 'UPDATE' and (to_jsonb(new) - tg_argv[1:]) = (to_jsonb(old) - tg_argv[1:]) then
    return null;
  end if;
  if tg_op = 'DELETE' then row_id := to_jsonb(old) ->> tg_argv[0]; else row_id := to_jsonb(new) ->> tg_argv[0]; end if;
  perform pg_notify('gw_config_' || left(md5(tg_table_schema), 16),
    json_build_object('entity', tg_table_name, 'id', row_id, 'op', lower(tg_op), 'origin', current_setting('application_name', true))::text);
  return null;
end $$;`);
    for (const [table, key, ...ignored] of NOTIFYING_TABLES) {
      const args = [key, ...ignored].map((name) => `'${name}'`).join(", ");
      this.addSql(`create trigger "${table}_notify_change" after insert or update or delete on "${table}" for each row execute function "gw_notify_config_change"(${args});`);
    }
  }

  override async down(): Promise<void> {
    for (const [table] of NOTIFYING_TABLES) this.addSql(`drop trigger if exists "${table}_notify_change" on "${table}";`);
    this.addSql(`drop function if exists "gw_notify_config_change"();`);
    this.addSql(`drop table if exists "gateway_node" cascade;`);
    this.addSql(`drop table if exists "encryption_key_check" cascade;`);
    this.addSql(`drop table if exists "mcp_client_node_state" cascade;`);
  }

}
