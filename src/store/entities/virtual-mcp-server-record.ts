/** One virtual MCP server (table virtual_mcp_server). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** One member as stored, every default filled in by the API's parser. */
export interface StoredVirtualMember {
  /** The MCP client's name. */
  client: string;
  /** ["*"] all, [] none, otherwise the named tools. */
  tools: string[];
  resources: boolean;
  prompts: boolean;
}

/** A virtual MCP server as stored; its name is its key and its path, /mcp/<name>. */
export class VirtualMcpServerRecord {
  declare [OptionalProps]?: "description" | "source" | "createdAt" | "updatedAt";

  declare name: string;
  declare description: string;
  declare members: StoredVirtualMember[];
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of VirtualMcpServerRecord. */
export const VirtualMcpServerSchema = new EntitySchema<VirtualMcpServerRecord>({
  class: VirtualMcpServerRecord,
  tableName: "virtual_mcp_server",
  properties: {
    name: { type: "string", primary: true },
    description: { type: "text", onCreate: () => "" },
    members: { type: "json" },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
