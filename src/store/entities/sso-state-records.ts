/** SSO browser logins in progress (table sso_login) and the sessions they opened (table sso_session). */
import { EntitySchema } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

/** The secret half of a pending login, encrypted at rest. */
export interface SsoLoginSecrets {
  /** The PKCE verifier. */
  verifier: string;
  /** The nonce the ID token must carry. */
  nonce: string;
}

/**
 * A login between the redirect to the identity provider and its callback, keyed by the SHA-256 of its
 * single-use state; the callback deletes the row, so a state is used once on whichever node it reaches.
 * Fields are `declare`d so ES2022 class fields do not shadow MikroORM's prototype accessors.
 */
export class SsoLoginRecord {
  declare stateHash: string;
  declare secrets: SsoLoginSecrets;
  declare returnTo: string;
  declare redirectUri: string;
  declare expiresAt: Date;
}

/** Mapping of SsoLoginRecord. */
export const SsoLoginSchema = new EntitySchema<SsoLoginRecord>({
  class: SsoLoginRecord,
  tableName: "sso_login",
  properties: {
    stateHash: { type: "string", primary: true },
    secrets: { type: new EncryptedJsonType<SsoLoginSecrets>() },
    returnTo: { type: "text" },
    redirectUri: { type: "text" },
    expiresAt: { type: "datetime", index: "sso_login_expires_at_index" },
  },
});

/** The signed-in user of a session, as the ID token named them. */
export interface SsoSessionUser {
  id: string;
  name: string;
  email: string | null;
  admin: boolean;
  expiresAt: number;
}

/** The secret half of a session, encrypted at rest: the IdP access token kept for token exchange. */
export interface SsoSessionSecrets {
  accessToken: string | null;
}

/** A signed-in SSO session, keyed by the SHA-256 of its cookie value. */
export class SsoSessionRecord {
  declare idHash: string;
  declare user: SsoSessionUser;
  declare secrets: SsoSessionSecrets;
  declare expiresAt: Date;
}

/** Mapping of SsoSessionRecord. */
export const SsoSessionSchema = new EntitySchema<SsoSessionRecord>({
  class: SsoSessionRecord,
  tableName: "sso_session",
  properties: {
    idHash: { type: "string", primary: true },
    user: { type: "json" },
    secrets: { type: new EncryptedJsonType<SsoSessionSecrets>() },
    expiresAt: { type: "datetime", index: "sso_session_expires_at_index" },
  },
});
