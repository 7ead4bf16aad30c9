/** What one node sees of one MCP client (table mcp_client_node_state), for the cluster-wide listing. */
import { EntitySchema } from "@mikro-orm/core";

/** One node's view of one client: its connection state, last failure and tool count. */
export class McpClientNodeStateRecord {
  declare clientId: string;
  declare nodeId: string;
  declare state: string;
  declare lastFailure: string | null;
  declare toolsCount: number;
  declare updatedAt: Date;
}

/** Mapping of McpClientNodeStateRecord. */
export const McpClientNodeStateSchema = new EntitySchema<McpClientNodeStateRecord>({
  class: McpClientNodeStateRecord,
  tableName: "mcp_client_node_state",
  properties: {
    clientId: { type: "string", primary: true },
    nodeId: { type: "string", primary: true },
    state: { type: "string" },
    lastFailure: { type: "text", nullable: true },
    toolsCount: { type: "integer" },
    updatedAt: { type: "datetime" },
  },
});
