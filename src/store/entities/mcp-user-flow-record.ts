/** One pending per-user flow (table mcp_user_flow): a header submission or an end-user's OAuth consent. */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";
import { MCP_IDENTITY_KINDS, type McpIdentityKind } from "./mcp-user-credential-record.js";

export const MCP_FLOW_KINDS = ["headers", "oauth"] as const;
export type McpFlowKind = (typeof MCP_FLOW_KINDS)[number];

/** The secret half of a flow, encrypted at rest: what a reused flow must hand out again, and the PKCE verifier. */
export interface McpUserFlowSecrets {
  /** The flow id as it goes into the link (the row is keyed by its hash). */
  flowId: string;
  /** The current temp token, when `tempTokenHash` is set. */
  tempToken?: string;
  /** oauth flows: the PKCE verifier of the current authorization. */
  codeVerifier?: string;
  /** oauth flows: the authorization URL of the current authorization (it carries the state). */
  authorizeUrl?: string;
  /**
   * oauth flows bound to a user: SHA-256 hashes of the browser cookies of the browsers that started the
   * current authorization signed in as that user; its callback is taken from those browsers.
   */
  browsers?: string[];
}

/**
 * A flow is keyed by the SHA-256 of its id, so the table alone never yields a working link. `tempTokenHash`
 * and `stateHash` are the SHA-256 of the single-use temp token and OAuth state; each is cleared (by a
 * conditional update, so two nodes cannot both spend it) when used. Fields are `declare`d so ES2022 class
 * fields do not shadow MikroORM's prototype accessors.
 */
export class McpUserFlowRecord {
  declare [OptionalProps]?: "completed" | "tempTokenHash" | "stateHash" | "error";

  declare idHash: string;
  declare kind: McpFlowKind;
  declare clientId: string;
  declare identityKind: McpIdentityKind;
  declare identityId: string;
  declare identityName: string;
  declare tokenAuth: boolean;
  declare completed: boolean;
  declare tempTokenHash: string | null;
  declare stateHash: string | null;
  declare error: string | null;
  declare secrets: McpUserFlowSecrets;
  declare createdAt: Date;
  declare expiresAt: Date;
}

/** Mapping of McpUserFlowRecord. */
export const McpUserFlowSchema = new EntitySchema<McpUserFlowRecord>({
  class: McpUserFlowRecord,
  tableName: "mcp_user_flow",
  properties: {
    idHash: { type: "string", primary: true },
    kind: { enum: true, items: [...MCP_FLOW_KINDS] },
    clientId: { type: "uuid", index: "mcp_user_flow_client_index" },
    identityKind: { enum: true, items: [...MCP_IDENTITY_KINDS] },
    identityId: { type: "text" },
    identityName: { type: "text" },
    tokenAuth: { type: "boolean" },
    completed: { type: "boolean", onCreate: () => false },
    tempTokenHash: { type: "text", nullable: true, onCreate: () => null },
    stateHash: { type: "text", nullable: true, unique: "mcp_user_flow_state_unique", onCreate: () => null },
    error: { type: "text", nullable: true, onCreate: () => null },
    secrets: { type: new EncryptedJsonType<McpUserFlowSecrets>() },
    createdAt: { type: "datetime" },
    expiresAt: { type: "datetime", index: "mcp_user_flow_expires_at_index" },
  },
});
