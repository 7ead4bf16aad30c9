/**
 * OAuth access tokens for Google service accounts: an RS256-signed JWT assertion (jose) exchanged at the
 * account's own token_uri (the JWT-bearer grant), so any token endpoint the key names is honoured. A
 * token is reused until a minute before it expires, and a key never has two fetches in flight.
 */
import { importPKCS8, SignJWT } from "jose";
import type { Dispatcher } from "undici";
import { postCall, sendJson } from "../http/upstream-http.js";
import { ProviderError } from "../provider-error.js";
import type { CallOptions, ServiceAccount } from "../types.js";

/** The scope Vertex AI calls need. */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** A token this close to its expiry is replaced before use. */
const REFRESH_MARGIN_MS = 60_000;
/** Lifetime asked for in the assertion (Google's maximum). */
const ASSERTION_LIFETIME_S = 3600;

interface CachedToken {
  token: string;
  expiresAt: number;
}

/** Mints and caches access tokens for the service accounts of one provider. */
export class AccessTokens {
  private readonly cached = new WeakMap<ServiceAccount, CachedToken>();
  private readonly inFlight = new WeakMap<ServiceAccount, Promise<CachedToken>>();

  constructor(
    private readonly provider: string,
    private readonly dispatcher: Dispatcher,
  ) {}

  /** A valid access token for `account`, fetched only when none is cached or it is about to expire. */
  async token(account: ServiceAccount, options: Omit<CallOptions, "key">): Promise<string> {
    const cached = this.cached.get(account);
    if (cached !== undefined && cached.expiresAt - REFRESH_MARGIN_MS > Date.now()) return cached.token;
    let pending = this.inFlight.get(account);
    if (pending === undefined) {
      // The fetch is shared by every waiting request, so no single caller's abort may cut it short.
      pending = this.fetch(account, { ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) }).finally(() => this.inFlight.delete(account));
      this.inFlight.set(account, pending);
    }
    const fresh = await pending;
    this.cached.set(account, fresh);
    return fresh.token;
  }

  private async fetch(account: ServiceAccount, options: Omit<CallOptions, "key">): Promise<CachedToken> {
    const now = Math.floor(Date.now() / 1000);
    let assertion: string;
    try {
      const key = await importPKCS8(account.privateKey, "RS256");
      assertion = await new SignJWT({ scope: CLOUD_PLATFORM_SCOPE })
        .setProtectedHeader({ alg: "RS256", typ: "JWT", ...(account.privateKeyId !== null ? { kid: account.privateKeyId } : {}) })
        .setIssuer(account.clientEmail)
        .setAudience(account.tokenUri)
        .setIssuedAt(now)
        .setExpirationTime(now + ASSERTION_LIFETIME_S)
        .sign(key);
    } catch (err) {
      throw new ProviderError(this.provider, null, "provider_auth", `${this.provider} could not sign a token request for ${account.clientEmail}: ${(err as Error).message}`, err);
    }
    const form = new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString();
    let body;
    try {
      ({ body } = await sendJson(this.dispatcher, this.provider, postCall(account.tokenUri, { "content-type": "application/x-www-form-urlencoded" }, form, options)));
    } catch (err) {
      // A refused assertion (invalid_grant, a disabled account) is a credential problem: another key may work.
      if (err instanceof ProviderError && err.upstreamStatus !== null && err.upstreamStatus >= 400 && err.upstreamStatus < 500) {
        throw new ProviderError(this.provider, err.upstreamStatus, "provider_auth", `${this.provider} token endpoint refused ${account.clientEmail}: ${err.message}`, err);
      }
      throw err;
    }
    const token = body["access_token"];
    const expiresIn = typeof body["expires_in"] === "number" ? body["expires_in"] : ASSERTION_LIFETIME_S;
    if (typeof token !== "string" || token === "") {
      throw new ProviderError(this.provider, null, "provider_auth", `${this.provider} token endpoint answered without an access_token for ${account.clientEmail}`);
    }
    return { token, expiresAt: Date.now() + expiresIn * 1000 };
  }
}
