/**
 * The OAuth tokens of per_user_oauth callers, stored as per-user credentials (encrypted values, one per
 * client and identity): reading a token for a call, refreshing it a minute before it expires or once the
 * upstream rejected it, one refresh at a time per credential (callers arriving during a refresh wait for
 * it; instances sharing a PostgreSQL database take the credential's row lock), and what a dead grant does (the credential needs an update, the next call asks for consent again).
 */
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { GatewayError } from "../../errors.js";
import type { Logger } from "../../telemetry/logger.js";
import { isDeadGrant, oauthFailure, refreshTokens, type GrantContext } from "../oauth/authorization.js";
import type { BearerSource } from "../oauth/bearer-fetch.js";
import { REFRESH_AHEAD_MS } from "../oauth/oauth-tokens.js";
import type { CredentialRepository, StoredCredential } from "./repository.js";

/** The keys of a per-user OAuth credential's encrypted values. */
const ACCESS = "access_token";
const REFRESH = "refresh_token";
const EXPIRES = "expires_at";
const CLIENT = "client_information";

/** The values stored for a token response: the tokens, their expiry (epoch ms) and the registered client they belong to. */
export function tokenValues(tokens: OAuthTokens, client: OAuthClientInformationMixed, now: number, previousRefresh?: string): Record<string, string> {
  const refresh = tokens.refresh_token ?? previousRefresh;
  return {
    [ACCESS]: tokens.access_token,
    ...(refresh ? { [REFRESH]: refresh } : {}),
    ...(typeof tokens.expires_in === "number" && Number.isFinite(tokens.expires_in) ? { [EXPIRES]: String(now + tokens.expires_in * 1000) } : {}),
    // The client a grant was issued to: an admin reauthorization may register a new one, and a refresh must use the old.
    [CLIENT]: JSON.stringify(client),
  };
}

/** True when the stored values hold an access token. */
export function holdsAccessToken(values: Readonly<Record<string, string>>): boolean {
  return typeof values[ACCESS] === "string" && values[ACCESS] !== "";
}

/** The tokens of a stored credential that a revocation sends (refresh first: revoking it ends the grant). */
export function revocableTokens(values: Readonly<Record<string, string>>): Array<{ token: string; hint: "access_token" | "refresh_token" }> {
  const out: Array<{ token: string; hint: "access_token" | "refresh_token" }> = [];
  const refresh = values[REFRESH];
  const access = values[ACCESS];
  if (refresh) out.push({ token: refresh, hint: "refresh_token" });
  if (access) out.push({ token: access, hint: "access_token" });
  return out;
}

/** The client a stored grant was issued to. */
export function clientOfValues(values: Readonly<Record<string, string>>, fallback: OAuthClientInformationMixed): OAuthClientInformationMixed {
  try {
    const parsed = JSON.parse(values[CLIENT] ?? "") as unknown;
    if (parsed !== null && typeof parsed === "object" && typeof (parsed as { client_id?: unknown }).client_id === "string") return parsed as OAuthClientInformationMixed;
  } catch {
    // Stored before the client was recorded: the current registration is the best guess.
  }
  return fallback;
}

/** The error a per-user call fails with when the upstream rejected the caller's token. */
export function userTokenRejected(clientName: string, detail: string): GatewayError {
  return new GatewayError("unavailable", `MCP client "${clientName}" rejected your OAuth token: ${detail}`, { type: "upstream_auth_rejected" });
}

/** What the per-user token source needs. */
export interface UserTokenDeps {
  repo: CredentialRepository;
  logger: Logger;
  now: () => number;
  /** The client's grant context (discovery and registration of the admin's authorization). */
  grant: (clientId: string) => GrantContext | undefined;
}

/** Per-user OAuth tokens: token sources for calls and the refresh lock. */
export class UserOauthTokens {
  /** Refreshes in flight by credential id. */
  private readonly refreshing = new Map<string, Promise<void>>();

  constructor(private readonly deps: UserTokenDeps) {}

  /**
   * The token source of one call with credential `credentialId`. A rejected token is refreshed (once,
   * shared with concurrent callers) and the request then fails: whether the call is retried is the
   * runtime's decision, made from the tool's annotations.
   */
  source(credentialId: string, clientName: string): BearerSource & { readonly lastSent: string | null } {
    let lastSent: string | null = null;
    return {
      get lastSent() {
        return lastSent;
      },
      token: async () => {
        const cred = this.current(credentialId, clientName);
        const expires = Number(cred.values[EXPIRES] ?? "");
        if (cred.values[REFRESH] && Number.isFinite(expires) && expires > 0 && this.deps.now() >= expires - REFRESH_AHEAD_MS) {
          await this.refresh(credentialId, cred.values[ACCESS] ?? "");
        }
        lastSent = this.current(credentialId, clientName).values[ACCESS] ?? "";
        return lastSent;
      },
      rejected: async (sent) => {
        await this.refresh(credentialId, sent).catch(() => undefined);
        throw userTokenRejected(clientName, "the upstream answered HTTP 401");
      },
    };
  }

  private current(credentialId: string, clientName: string): StoredCredential {
    const cred = this.deps.repo.get(credentialId);
    // An orphaned credential reaches here only while its restore is being recorded.
    if (!cred || cred.status === "needs_update" || !holdsAccessToken(cred.values)) throw userTokenRejected(clientName, "the credential is no longer active");
    return cred;
  }

  /**
   * Refreshes the credential unless its token already moved on from `sent`; one refresh per credential at
   * a time. A dead grant sends the credential to needs_update; other failures leave it as it is.
   */
  refresh(credentialId: string, sent: string): Promise<void> {
    let running = this.refreshing.get(credentialId);
    if (!running) {
      running = this.runRefresh(credentialId, sent).finally(() => this.refreshing.delete(credentialId));
      this.refreshing.set(credentialId, running);
    }
    return running;
  }

  private async runRefresh(credentialId: string, sent: string): Promise<void> {
    const cached = this.deps.repo.get(credentialId);
    if (!cached || cached.status === "needs_update" || cached.values[ACCESS] !== sent) return;
    let outcome = "";
    await this.deps.repo.withRowLock(credentialId, async (cred) => {
      // Another instance refreshed (or the credential changed) while this one waited for the lock: take the stored row.
      if (cred.status === "needs_update" || cred.values[ACCESS] !== sent) return null;
      const grant = this.deps.grant(cred.clientId);
      const refreshToken = cred.values[REFRESH];
      if (!refreshToken || !grant) {
        outcome = refreshToken ? "the client has no authorization server on file" : "the token was rejected or expired and there is no refresh token";
        return { status: "needs_update" };
      }
      const client = clientOfValues(cred.values, grant.clientInformation);
      let tokens: OAuthTokens;
      try {
        tokens = await refreshTokens({ ...grant, clientInformation: client, refreshToken });
      } catch (err) {
        const message = oauthFailure("the OAuth token refresh", err).message;
        if (isDeadGrant(err)) {
          outcome = message;
          return { status: "needs_update" };
        }
        this.deps.logger.warn({ client_id: cred.clientId, credential_id: cred.id, err: message }, "per-user OAuth token refresh failed");
        throw new GatewayError("unavailable", message, { type: "upstream_error" });
      }
      this.deps.logger.info({ client_id: cred.clientId, credential_id: cred.id, identity_kind: cred.identityKind }, "per-user OAuth token refreshed");
      return { values: tokenValues(tokens, client, this.deps.now(), refreshToken) };
    });
    if (outcome !== "") {
      this.deps.logger.warn({ client_id: cached.clientId, credential_id: cached.id, identity_kind: cached.identityKind, reason: outcome }, "per-user OAuth credential needs a new consent");
    }
  }
}
