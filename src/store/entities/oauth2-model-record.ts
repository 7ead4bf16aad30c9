/** One object of the gateway's OAuth 2.1 authorization server (table oauth2_model). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

/**
 * A grant, session, interaction, code, token or registered client of the /mcp authorization server, or
 * its signing keys: `kind` names the model, `payload` is the model's own JSON, encrypted (it holds
 * tokens, client secrets and private keys).
 */
export class OAuth2ModelRecord {
  declare [OptionalProps]?: "grantId" | "uid" | "expiresAt" | "createdAt";

  /** `<kind>:<id>`. */
  declare key: string;
  declare kind: string;
  declare payload: Record<string, unknown>;
  declare grantId: string | null;
  declare uid: string | null;
  declare expiresAt: Date | null;
  declare createdAt: Date;
}

/** Mapping of OAuth2ModelRecord. */
export const OAuth2ModelSchema = new EntitySchema<OAuth2ModelRecord>({
  class: OAuth2ModelRecord,
  tableName: "oauth2_model",
  properties: {
    key: { type: "string", primary: true },
    kind: { type: "string", index: "oauth2_model_kind_index" },
    payload: { type: new EncryptedJsonType<Record<string, unknown>>() },
    grantId: { type: "string", nullable: true, index: "oauth2_model_grant_id_index" },
    uid: { type: "string", nullable: true, index: "oauth2_model_uid_index" },
    expiresAt: { type: "datetime", nullable: true },
    createdAt: { type: "datetime", onCreate: () => new Date() },
  },
});
