/** One runtime setting as a JSON value under a key (table setting). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** A setting; the services layer owns which keys exist and their shapes. */
export class SettingRecord {
  declare [OptionalProps]?: "updatedAt";

  declare key: string;
  declare value: unknown;
  declare updatedAt: Date;
}

/** Mapping of SettingRecord. */
export const SettingSchema = new EntitySchema<SettingRecord>({
  class: SettingRecord,
  tableName: "setting",
  properties: {
    key: { type: "string", primary: true },
    value: { type: "json" },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
