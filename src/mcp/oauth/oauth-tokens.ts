/**
 * The access tokens of the oauth clients, held in memory so a request never waits on the database. A
 * token is refreshed a minute before it expires and once when the upstream rejects it, one refresh at a
 * time per credential: concurrent callers share the refresh in flight, and across instances the refresh
 * runs under a row lock (SELECT ... FOR UPDATE) that also lets an instance adopt a token another one has
 * just refreshed. A refresh the authorization server refuses for good (invalid_grant) kills the
 * credential: `onDead` tells the runtime, which moves the client to needs_reauth.
 */
import { LockMode } from "@mikro-orm/core";
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { GatewayError } from "../../errors.js";
import { inNativeTransaction, McpOauthCredentialRecord, writeRecord, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import { upstreamMessage } from "../upstream-errors.js";
import { isDeadGrant, oauthFailure, refreshTokens, type GrantContext } from "./authorization.js";
import type { BearerSource } from "./bearer-fetch.js";

/** A token this close to its expiry is refreshed before it is sent. */
export const REFRESH_AHEAD_MS = 60_000;

/** What the cache needs. */
export interface OauthTokensDeps {
  store: Store;
  logger: Logger;
  now: () => number;
  /** A credential died: the client needs a new consent. */
  onDead: (clientId: string, message: string) => void;
}

interface Live {
  credentialId: string;
  clientId: string;
  grant: GrantContext;
  accessToken: string;
  refreshToken: string | null;
  /** Epoch ms, null when the server did not say. */
  expiresAt: number | null;
  refreshing: Promise<void> | undefined;
  /** Why the credential is dead, once it is. */
  dead: string | null;
}

/** The token fields the store keeps from a token response. */
export function tokenColumns(tokens: OAuthTokens, now: number, previousRefresh: string | null = null): { tokens: Record<string, unknown>; expiresAt: Date | null; scopes: string[] } {
  const refresh = tokens.refresh_token ?? previousRefresh;
  return {
    tokens: { access_token: tokens.access_token, token_type: tokens.token_type, ...(refresh ? { refresh_token: refresh } : {}), ...(tokens.scope ? { scope: tokens.scope } : {}) },
    expiresAt: typeof tokens.expires_in === "number" && Number.isFinite(tokens.expires_in) ? new Date(now + tokens.expires_in * 1000) : null,
    scopes: tokens.scope ? tokens.scope.split(" ").filter(Boolean) : [],
  };
}

/** The grant context a stored, authorized attempt carries. */
export function grantOf(rec: McpOauthCredentialRecord, serverUrl: string): GrantContext {
  return {
    serverUrl,
    redirectUri: rec.redirectUri,
    discovery: (rec.serverMetadata ?? { authorizationServerUrl: "" }) as unknown as OAuthDiscoveryState,
    clientInformation: (rec.secrets.clientInformation ?? { client_id: "" }) as OAuthClientInformationMixed,
    resource: rec.resource ?? serverUrl,
  };
}

function authDead(clientId: string, message: string): GatewayError {
  return new GatewayError(
    "unavailable",
    `${message}; an admin must reauthorize the client (POST /api/mcp/client/${clientId}/reauthorize)`,
    { type: "upstream_auth_rejected" },
  );
}

/** The in-memory tokens of every authorized oauth client. */
export class OauthTokens {
  private readonly live = new Map<string, Live>();
  /**
   * The grant context (discovery, registered client, redirect URI) of each client's newest authorized
   * attempt. It outlives the tokens of a revoked or dead credential: per_user_oauth callers start and
   * refresh their own grants with it while the admin discovery credential waits for repair.
   */
  private readonly grants = new Map<string, GrantContext>();

  constructor(private readonly deps: OauthTokensDeps) {}

  /** Loads the authorized credential of each given oauth client (start-up). */
  async load(clients: ReadonlyArray<{ id: string; serverUrl: string }>): Promise<void> {
    if (clients.length === 0) return;
    const em = this.deps.store.fork();
    const urls = new Map(clients.map((c) => [c.id, c.serverUrl]));
    const records = await em.find(McpOauthCredentialRecord, { clientId: { $in: [...urls.keys()] }, status: "authorized" }, { orderBy: { updatedAt: "asc" } });
    for (const rec of records) this.adopt(rec, urls.get(rec.clientId) ?? "");
  }

  /** Makes an authorized attempt the client's credential (replacing any earlier one). */
  adopt(rec: McpOauthCredentialRecord, serverUrl: string): void {
    const tokens = rec.secrets.tokens ?? {};
    const access = typeof tokens["access_token"] === "string" ? tokens["access_token"] : "";
    if (access === "") return;
    const grant = grantOf(rec, serverUrl);
    this.grants.set(rec.clientId, grant);
    this.live.set(rec.clientId, {
      credentialId: rec.id,
      clientId: rec.clientId,
      grant,
      accessToken: access,
      refreshToken: typeof tokens["refresh_token"] === "string" ? tokens["refresh_token"] : null,
      expiresAt: rec.tokenExpiresAt ? rec.tokenExpiresAt.getTime() : null,
      refreshing: undefined,
      dead: null,
    });
  }

  /** Drops a client's credential: one revoked attempt (its grant context stays), or everything of a deleted client. */
  forget(clientId: string, credentialId?: string): void {
    const live = this.live.get(clientId);
    if (live && (credentialId === undefined || live.credentialId === credentialId)) this.live.delete(clientId);
    if (credentialId === undefined) this.grants.delete(clientId);
  }

  /** The grant context of the client's newest authorized attempt, if it ever had one. */
  grantOf(clientId: string): GrantContext | undefined {
    return this.grants.get(clientId);
  }

  /** The id of the attempt whose tokens a client uses, if any. */
  credentialOf(clientId: string): string | undefined {
    return this.live.get(clientId)?.credentialId;
  }

  /** The token source of a client's upstream requests. */
  source(clientId: string): BearerSource {
    return {
      token: () => this.token(clientId),
      rejected: (sent) => this.rejected(clientId, sent),
    };
  }

  private current(clientId: string): Live {
    const live = this.live.get(clientId);
    if (!live) throw authDead(clientId, "the client holds no OAuth token");
    if (live.dead) throw authDead(clientId, live.dead);
    return live;
  }

  private async token(clientId: string): Promise<string> {
    const live = this.current(clientId);
    if (live.expiresAt !== null && live.refreshToken && this.deps.now() >= live.expiresAt - REFRESH_AHEAD_MS) {
      await this.refresh(live);
      return this.current(clientId).accessToken;
    }
    return live.accessToken;
  }

  private async rejected(clientId: string, sent: string): Promise<void> {
    const live = this.current(clientId);
    // Someone refreshed while this request was out: retry with the newer token.
    if (live.accessToken !== sent) return;
    if (!live.refreshToken) {
      const reason = "the upstream rejected the OAuth access token (HTTP 401) and there is no refresh token";
      this.kill(live, reason);
      this.deps.onDead(clientId, reason);
      throw authDead(clientId, reason);
    }
    await this.refresh(live);
    const after = this.current(clientId);
    if (after.accessToken === sent) throw authDead(clientId, "the upstream rejected the OAuth access token (HTTP 401)");
  }

  /** One refresh per credential at a time: a caller arriving during a refresh waits for it. */
  private refresh(live: Live): Promise<void> {
    live.refreshing ??= this.runRefresh(live).finally(() => {
      live.refreshing = undefined;
    });
    return live.refreshing;
  }

  private async runRefresh(live: Live): Promise<void> {
    const sent = live.accessToken;
    try {
      await inNativeTransaction(this.deps.store, async (tx) => {
        const rec = await tx.findOne(McpOauthCredentialRecord, { id: live.credentialId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!rec || rec.status !== "authorized") {
          this.kill(live, `the OAuth credential was ${rec ? rec.status : "deleted"}`);
          return;
        }
        const stored = rec.secrets.tokens ?? {};
        if (stored["access_token"] !== sent) {
          // Another instance refreshed under the lock first: take its token.
          this.adoptInto(live, rec);
          return;
        }
        const refreshToken = typeof stored["refresh_token"] === "string" ? stored["refresh_token"] : live.refreshToken;
        if (!refreshToken) {
          this.kill(live, "the OAuth access token expired and there is no refresh token");
          return;
        }
        let tokens: OAuthTokens;
        try {
          tokens = await refreshTokens({ ...live.grant, refreshToken });
        } catch (err) {
          if (isDeadGrant(err)) {
            this.kill(live, oauthFailure("the OAuth token refresh", err).message);
            rec.error = live.dead;
            rec.updatedAt = new Date();
            await writeRecord(tx, rec);
            return;
          }
          throw oauthFailure("the OAuth token refresh", err);
        }
        const cols = tokenColumns(tokens, this.deps.now(), refreshToken);
        rec.secrets = { ...rec.secrets, tokens: cols.tokens };
        rec.tokenExpiresAt = cols.expiresAt;
        if (cols.scopes.length > 0) rec.tokenScopes = cols.scopes;
        rec.error = null;
        rec.updatedAt = new Date();
        await writeRecord(tx, rec);
        this.adoptInto(live, rec);
        this.deps.logger.info({ client_id: live.clientId, oauth_config_id: live.credentialId }, "upstream OAuth token refreshed");
      });
    } catch (err) {
      // A passing fault (the authorization server down, the database busy): the credential lives on and the call fails as unavailable.
      const message = err instanceof GatewayError ? err.message : upstreamMessage(err);
      this.deps.logger.warn({ client_id: live.clientId, oauth_config_id: live.credentialId, err: message }, "upstream OAuth token refresh failed");
      throw new GatewayError("unavailable", message, { type: "upstream_error" });
    }
    if (live.dead) {
      this.deps.logger.warn({ client_id: live.clientId, oauth_config_id: live.credentialId, reason: live.dead }, "upstream OAuth credential is dead");
      this.deps.onDead(live.clientId, live.dead);
    }
  }

  private adoptInto(live: Live, rec: McpOauthCredentialRecord): void {
    const tokens = rec.secrets.tokens ?? {};
    if (typeof tokens["access_token"] === "string") live.accessToken = tokens["access_token"];
    live.refreshToken = typeof tokens["refresh_token"] === "string" ? tokens["refresh_token"] : live.refreshToken;
    live.expiresAt = rec.tokenExpiresAt ? rec.tokenExpiresAt.getTime() : null;
  }

  private kill(live: Live, reason: string): void {
    live.dead = reason;
  }
}
