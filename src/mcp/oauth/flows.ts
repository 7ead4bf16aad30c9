/**
 * Authorization attempts of oauth clients in the store: starting one (the network part first, so a failed
 * discovery stores nothing), the callback that spends the single-use state and exchanges the code, and the
 * expiry of attempts left pending for 15 minutes. Codes, verifiers, states and tokens are never logged.
 */
import { createHash } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError } from "../../errors.js";
import { McpClientRecord, McpOauthCredentialRecord, writeRecord } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpClientSpec } from "../client-spec.js";
import { exchangeCode, oauthFailure, startAuthorization, type StartedAuthorization } from "./authorization.js";
import { emptyOauthConfig } from "./oauth-config.js";
import { grantOf, tokenColumns } from "./oauth-tokens.js";

/** A pending attempt expires after this long. */
export const OAUTH_FLOW_TTL_MS = 15 * 60_000;
/** Where the authorization server sends the browser back. */
export const OAUTH_CALLBACK_PATH = "/api/oauth/callback";
/** The error text of an attempt that expired while pending. */
export const FLOW_EXPIRED = "the authorization attempt expired before consent was given";

/** The SHA-256 of a state value: the store never holds the value itself. */
export function hashState(state: string): string {
  return createHash("sha256").update(state).digest("hex");
}

/** The callback URL under `base` (the external URL or the request's origin). */
export function callbackUrl(base: string): string {
  return `${base.replace(/\/+$/, "")}${OAUTH_CALLBACK_PATH}`;
}

/** Discovery, registration and PKCE for a client, before anything is stored. */
export async function prepareFlow(spec: McpClientSpec, base: string): Promise<StartedAuthorization & { redirectUri: string }> {
  if (!spec.connectionString) throw new GatewayError("invalid_argument", "connection_string: is required for an oauth client", { field: "connection_string" });
  const redirectUri = callbackUrl(base);
  const started = await startAuthorization({
    serverUrl: spec.connectionString,
    config: spec.oauthConfig ?? emptyOauthConfig(),
    redirectUri,
    clientName: `gw MCP gateway (${spec.name})`,
  });
  return { ...started, redirectUri };
}

/** A new pending attempt of `clientId` (persisted with the caller's next flush). */
export function flowRecord(em: EntityManager, clientId: string, started: StartedAuthorization & { redirectUri: string }, now: number): McpOauthCredentialRecord {
  return em.create(McpOauthCredentialRecord, {
    clientId,
    status: "pending",
    stateHash: hashState(started.state),
    redirectUri: started.redirectUri,
    authorizationServerUrl: started.discovery.authorizationServerUrl,
    serverMetadata: started.discovery as unknown as Record<string, unknown>,
    resource: started.resource,
    secrets: { codeVerifier: started.codeVerifier, clientInformation: started.clientInformation as unknown as Record<string, unknown> },
    createdAt: new Date(now),
    expiresAt: new Date(now + OAUTH_FLOW_TTL_MS),
    updatedAt: new Date(now),
  });
}

/** Loads an authorization attempt by id or throws a 404 naming it. */
export async function findAttempt(em: EntityManager, id: string): Promise<McpOauthCredentialRecord> {
  const rec = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? await em.findOne(McpOauthCredentialRecord, { id: id.toLowerCase() }) : null;
  if (!rec) throw new GatewayError("not_found", `no OAuth authorization attempt with id "${id}"`);
  return rec;
}

/** Moves a pending attempt past its expiry to failed; true when it did. */
export function expireIfDue(rec: McpOauthCredentialRecord, now: number): boolean {
  if (rec.status !== "pending" || rec.expiresAt.getTime() > now) return false;
  // The state hash stays, so a late callback is told the attempt expired rather than that its state is unknown.
  rec.status = "failed";
  rec.error = FLOW_EXPIRED;
  rec.secrets = {};
  rec.updatedAt = new Date(now);
  return true;
}

/** Moves every attempt left pending past its expiry to failed, dropping its verifier and state. */
export async function sweepExpired(em: EntityManager, now: number): Promise<number> {
  const due = await em.find(McpOauthCredentialRecord, { status: "pending", expiresAt: { $lte: new Date(now) } });
  // Plain statements, never a flush: one on the serving thread turns Node 20's promise hooks on for good.
  for (const rec of due) if (expireIfDue(rec, now)) await writeRecord(em, rec);
  return due.length;
}

/** What the callback reports to the page. */
export interface CallbackOutcome {
  flowId: string;
  status: "authorized" | "failed";
  message: string;
  clientId: string;
  clientName: string;
}

/** The callback's query. */
export interface CallbackQuery {
  code: string;
  state: string;
  error: string;
  errorDescription: string;
}

/**
 * Handles the authorization server's redirect: finds the attempt by its state and spends the state (a
 * second use finds nothing), then stores the tokens the code is exchanged for, or the failure. A state
 * no attempt holds is a 400; an attempt past its expiry a 410.
 */
export async function handleCallback(em: EntityManager, query: CallbackQuery, now: number, logger: Logger): Promise<CallbackOutcome> {
  if (query.state === "") throw new GatewayError("invalid_argument", "state: is required: the authorization server's redirect carries the state the gateway sent", { field: "state", type: "invalid_oauth_state" });
  const hash = hashState(query.state);
  const rec = await em.findOne(McpOauthCredentialRecord, { stateHash: hash });
  // Spend the state at once, conditionally, so two callbacks racing with one state cannot both pass.
  const spent = rec ? await em.nativeUpdate(McpOauthCredentialRecord, { id: rec.id, stateHash: hash }, { stateHash: null }) : 0;
  if (!rec || spent !== 1) {
    throw new GatewayError("invalid_argument", "state: unknown or already used: this link was used once already or belongs to no authorization in progress; start a new one (initiate-verification or reauthorize)", {
      field: "state",
      type: "invalid_oauth_state",
    });
  }
  rec.stateHash = null;
  const client = await em.findOne(McpClientRecord, { id: rec.clientId });
  const clientName = client?.name ?? "";
  const outcome = (status: "authorized" | "failed", message: string): CallbackOutcome => ({ flowId: rec.id, status, message, clientId: rec.clientId, clientName });
  if (expireIfDue(rec, now) || (rec.status === "failed" && rec.error === FLOW_EXPIRED)) {
    await writeRecord(em, rec);
    throw new GatewayError("failed_precondition", `${FLOW_EXPIRED} (15 minutes); start a new one (initiate-verification or reauthorize)`, { type: "oauth_flow_expired", httpStatus: 410 });
  }
  if (rec.status !== "pending" || !client) {
    throw new GatewayError("failed_precondition", `the authorization attempt is ${client ? rec.status : "for a deleted client"}; start a new one`, { type: "invalid_oauth_state" });
  }
  const fail = async (message: string): Promise<CallbackOutcome> => {
    rec.status = "failed";
    rec.error = message;
    rec.secrets = {};
    rec.updatedAt = new Date(now);
    await writeRecord(em, rec);
    logger.warn({ client_id: rec.clientId, oauth_config_id: rec.id, err: message }, "upstream OAuth authorization failed");
    return outcome("failed", message);
  };
  if (query.error !== "") {
    return fail(`the authorization server refused: ${query.error}${query.errorDescription ? `: ${query.errorDescription}` : ""}`.slice(0, 512));
  }
  if (query.code === "") return fail("the authorization server's redirect carried neither a code nor an error");
  try {
    const grant = grantOf(rec, client.connectionString ?? "");
    const tokens = await exchangeCode({ ...grant, code: query.code, codeVerifier: rec.secrets.codeVerifier ?? "" });
    const cols = tokenColumns(tokens, now);
    rec.status = "authorized";
    rec.secrets = { clientInformation: rec.secrets.clientInformation ?? {}, tokens: cols.tokens };
    rec.tokenExpiresAt = cols.expiresAt;
    rec.tokenScopes = cols.scopes;
    rec.error = null;
    rec.updatedAt = new Date(now);
    await writeRecord(em, rec);
    logger.info({ client_id: rec.clientId, oauth_config_id: rec.id, scopes: cols.scopes }, "upstream OAuth authorization obtained");
    return outcome("authorized", `authorized: complete it with POST /api/mcp/client/${rec.id}/complete-oauth`);
  } catch (err) {
    return fail(oauthFailure("the authorization code exchange", err).message);
  }
}
