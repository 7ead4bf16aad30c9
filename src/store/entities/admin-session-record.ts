/** A signed-in admin session (table admin_session); only a hash of the token is stored. */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";

/** One admin session, keyed by the hash of its bearer token. */
export class AdminSessionRecord {
  declare [OptionalProps]?: "createdAt";

  declare tokenHash: string;
  declare username: string;
  declare createdAt: Date;
  declare expiresAt: Date;
}

/** Mapping of AdminSessionRecord. */
export const AdminSessionSchema = new EntitySchema<AdminSessionRecord>({
  class: AdminSessionRecord,
  tableName: "admin_session",
  properties: {
    tokenHash: { type: "string", primary: true },
    username: { type: "string" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    expiresAt: { type: "datetime", index: "admin_session_expires_at_index" },
  },
});
