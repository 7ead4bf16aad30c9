/** A running gateway node of a cluster sharing one database (table gateway_node). */
import { EntitySchema } from "@mikro-orm/core";

/** One node; it refreshes heartbeatAt while it runs and counts as gone once that is 30 s old. */
export class GatewayNodeRecord {
  declare id: string;
  declare address: string;
  declare version: string;
  declare startedAt: Date;
  declare heartbeatAt: Date;
}

/** Mapping of GatewayNodeRecord. */
export const GatewayNodeSchema = new EntitySchema<GatewayNodeRecord>({
  class: GatewayNodeRecord,
  tableName: "gateway_node",
  properties: {
    id: { type: "string", primary: true },
    address: { type: "string" },
    version: { type: "string" },
    startedAt: { type: "datetime" },
    heartbeatAt: { type: "datetime", index: "gateway_node_heartbeat_at_index" },
  },
});
