/** The encryption key check value (table encryption_key_check): one row sealed with the cluster's key. */
import { EntitySchema } from "@mikro-orm/core";

/** A known text sealed with the key that wrote the database; a node that cannot open it has another key. */
export class KeyCheckRecord {
  declare id: number;
  declare sealed: string;
}

/** Mapping of KeyCheckRecord. */
export const KeyCheckSchema = new EntitySchema<KeyCheckRecord>({
  class: KeyCheckRecord,
  tableName: "encryption_key_check",
  properties: {
    id: { type: "integer", primary: true, autoincrement: false },
    sealed: { type: "text" },
  },
});
