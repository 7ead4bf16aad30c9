/** One virtual key with its governance (table virtual_key). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

/** A virtual key. The value is encrypted; its SHA-256 keeps values unique without decrypting every row. */
export class VirtualKeyRecord {
  declare [OptionalProps]?: "isActive" | "providerConfigs" | "mcpConfigs" | "source" | "createdAt" | "updatedAt";

  declare id: string;
  declare name: string;
  declare value: string;
  declare valueHash: string;
  declare isActive: boolean;
  /** Wire JSON (snake_case) of provider_configs, validated before it is stored. */
  declare providerConfigs: Record<string, unknown>[];
  /** Wire JSON (snake_case) of mcp_configs; null when the key does not set it (unlike []). */
  declare mcpConfigs: Record<string, unknown>[] | null;
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of VirtualKeyRecord. */
export const VirtualKeySchema = new EntitySchema<VirtualKeyRecord>({
  class: VirtualKeyRecord,
  tableName: "virtual_key",
  properties: {
    id: { type: "string", primary: true },
    name: { type: "string", unique: "virtual_key_name_unique" },
    value: { type: new EncryptedJsonType<string>() },
    valueHash: { type: "string", unique: "virtual_key_value_hash_unique" },
    isActive: { type: "boolean", onCreate: () => true },
    providerConfigs: { type: "json", onCreate: () => [] },
    mcpConfigs: { type: "json", nullable: true },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
