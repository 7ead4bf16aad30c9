/**
 * IdP bearer tokens: `Authorization: Bearer <JWT>` issued by the configured SSO issuer, verified with jose
 * against the issuer's JWKS (fetched through its discovery document, cached, refetched when a token names a
 * key it does not have, so key rotation needs no restart). A verified token is the `user` identity. Only a
 * hash of a token is kept (with the verified claims until the token expires); the raw token lives in the
 * request that carried it. Nothing here touches the database.
 */
import { createRemoteJWKSet, customFetch, decodeJwt, errors, jwtVerify, type JWTPayload } from "jose";
import { egressFetch } from "../../config/egress-connections.js";
import { ssoEnabled, SSO_OFF, type SsoSettings } from "../../config/sso-config.js";
import { GatewayError } from "../../errors.js";
import { sha256Hex } from "../../sha256.js";

/** Tokens longer than this are refused before any parsing (real access tokens are a few KiB). */
export const MAX_IDP_TOKEN_CHARS = 8192;

/** Asymmetric algorithms only: `none` and HMAC (which would make the public keys a shared secret) never verify. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

/** Verified tokens remembered before the cache starts over. */
const MAX_CACHED = 10_000;

/** Clock skew tolerated on exp and nbf. */
const CLOCK_TOLERANCE_S = 30;

/** How long discovery and JWKS fetches may take. */
const FETCH_TIMEOUT_MS = 10_000;

/** A signed-in user as an IdP token or SSO login shows them. */
export interface IdpUser {
  /** The `sub` claim: what per-user credentials are stored under. */
  id: string;
  /** email, else preferred_username, else sub. */
  name: string;
  email: string | null;
  /** Listed in sso.admin_emails or carrying one of sso.admin_groups in sso.admin_group_claim. */
  admin: boolean;
  /** When the token stops being valid (ms since the epoch). */
  expiresAt: number;
}

/** The identity parts of a verified token, and the token itself for token exchange (memory only). */
export interface VerifiedToken {
  user: IdpUser;
  token: string;
}

/** The 401 for an IdP token that does not verify; the message never carries the token. */
export function idpTokenRefused(reason: string): GatewayError {
  return new GatewayError("unauthenticated", `IdP bearer token refused: ${reason}`, { type: "idp_token_invalid", httpStatus: 401 });
}

/** The `iss` of a JWT-shaped value without verifying anything; null when the value is not a JWT. */
export function unverifiedIssuer(token: string): string | null {
  if (token.split(".").length !== 3) return null;
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === "string" ? iss : null;
  } catch {
    return null;
  }
}

/** Whether the claims make the user an admin under the sso settings. */
export function isSsoAdmin(claims: JWTPayload, sso: SsoSettings): boolean {
  const email = typeof claims["email"] === "string" ? claims["email"].toLowerCase() : null;
  if (email !== null && sso.adminEmails.includes(email)) return true;
  const groups = claims[sso.adminGroupClaim];
  const list = Array.isArray(groups) ? groups : typeof groups === "string" ? groups.split(/\s+/) : [];
  return list.some((group) => typeof group === "string" && sso.adminGroups.includes(group));
}

/** The user behind verified claims. */
export function userOfClaims(claims: JWTPayload, sso: SsoSettings): IdpUser {
  const email = typeof claims["email"] === "string" ? claims["email"] : null;
  const preferred = typeof claims["preferred_username"] === "string" ? claims["preferred_username"] : null;
  const sub = claims.sub ?? "";
  return { id: sub, name: email ?? preferred ?? sub, email, admin: isSsoAdmin(claims, sso), expiresAt: (claims.exp ?? 0) * 1000 };
}

/** Why jose refused a token, in words a caller can act on. */
function reasonOf(err: unknown, sso: SsoSettings): string {
  if (err instanceof errors.JWTExpired) return "it has expired; get a fresh token from the identity provider";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "aud") return `its audience (aud) does not include this gateway's client id "${sso.clientId}"`;
    if (err.claim === "nbf") return "it is not valid yet (nbf is in the future)";
    if (err.claim === "iss") return `it was not issued by ${sso.issuer}`;
    return `its ${err.claim} claim is not acceptable (${err.reason})`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return `its signing algorithm is not accepted (allowed: ${ALGORITHMS.join(", ")}; unsigned tokens never are)`;
  if (err instanceof errors.JWSSignatureVerificationFailed) return "its signature does not verify against the issuer's published keys";
  if (err instanceof errors.JWKSNoMatchingKey) return "it is signed with a key the issuer does not publish";
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return "it is not a well-formed signed JWT";
  if (err instanceof errors.JWKSTimeout) return `the issuer's keys could not be fetched in time`;
  if (err instanceof GatewayError) return err.message;
  return "it could not be verified";
}

/** Verifies IdP bearer tokens for the configured issuer. */
export class IdpTokens {
  private sso: SsoSettings;
  private keys: ReturnType<typeof createRemoteJWKSet> | null = null;
  private discovery: Promise<{ jwksUri: string; tokenEndpoint: string | null; authorizationEndpoint: string | null; endSessionEndpoint: string | null }> | null = null;
  private readonly verified = new Map<string, IdpUser>();

  constructor(sso: SsoSettings = SSO_OFF) {
    this.sso = sso;
  }

  /** The settings in force. */
  get settings(): SsoSettings {
    return this.sso;
  }

  /** True when an issuer is configured. */
  get enabled(): boolean {
    return ssoEnabled(this.sso);
  }

  /** Takes up changed sso settings (config reload); true when anything changed. */
  reconfigure(next: SsoSettings): boolean {
    if (JSON.stringify(next) === JSON.stringify(this.sso)) return false;
    this.sso = next;
    this.keys = null;
    this.discovery = null;
    this.verified.clear();
    return true;
  }

  /** True when `token` is a JWT that claims to come from the configured issuer (nothing verified yet). */
  claimsIssuer(token: string): boolean {
    return this.enabled && unverifiedIssuer(token) === this.sso.issuer;
  }

  /** The issuer's discovery document (fetched once; a failure is retried on the next call). */
  metadata(): Promise<{ jwksUri: string; tokenEndpoint: string | null; authorizationEndpoint: string | null; endSessionEndpoint: string | null }> {
    this.discovery ??= (async () => {
      const url = `${this.sso.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
      let doc: Record<string, unknown>;
      try {
        const res = await egressFetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: "application/json" } });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        doc = (await res.json()) as Record<string, unknown>;
      } catch (err) {
        throw new GatewayError("unavailable", `the SSO issuer's discovery document ${url} could not be read: ${err instanceof Error ? err.message : String(err)}`, {
          type: "sso_discovery_failed",
        });
      }
      const str = (name: string): string | null => (typeof doc[name] === "string" ? (doc[name] as string) : null);
      const jwksUri = str("jwks_uri");
      if (jwksUri === null) throw new GatewayError("unavailable", `the SSO issuer's discovery document ${url} names no jwks_uri`, { type: "sso_discovery_failed" });
      return { jwksUri, tokenEndpoint: str("token_endpoint"), authorizationEndpoint: str("authorization_endpoint"), endSessionEndpoint: str("end_session_endpoint") };
    })();
    const pending = this.discovery;
    pending.catch(() => {
      if (this.discovery === pending) this.discovery = null;
    });
    return pending;
  }

  /** The issuer's key set (for ID tokens of SSO logins). */
  keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    return this.jwks();
  }

  private async jwks(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.keys) return this.keys;
    const { jwksUri } = await this.metadata();
    // A token naming an unknown kid refetches the set (at most every few seconds), so rotation is picked up.
    this.keys ??= createRemoteJWKSet(new URL(jwksUri), { timeoutDuration: FETCH_TIMEOUT_MS, cooldownDuration: 2_000, cacheMaxAge: 10 * 60_000, [customFetch]: egressFetch });
    return this.keys;
  }

  /** Verifies a token of the configured issuer; throws the 401 naming what is wrong. */
  async verify(token: string): Promise<VerifiedToken> {
    if (!this.enabled) throw idpTokenRefused("single sign-on is not configured on this gateway");
    if (token.length > MAX_IDP_TOKEN_CHARS) throw idpTokenRefused(`it is ${token.length} characters long; the limit is ${MAX_IDP_TOKEN_CHARS}`);
    const hash = sha256Hex(token);
    const cached = this.verified.get(hash);
    if (cached && cached.expiresAt > Date.now()) return { user: cached, token };
    if (cached) this.verified.delete(hash);
    const sso = this.sso;
    let claims: JWTPayload;
    try {
      claims = await verifiedClaims(token, await this.jwks(), sso);
    } catch (err) {
      throw idpTokenRefused(reasonOf(err, sso));
    }
    const user = userOfClaims(claims, sso);
    if (this.verified.size >= MAX_CACHED) this.verified.clear();
    this.verified.set(hash, user);
    return { user, token };
  }
}

/** A token's claims once its signature, issuer, audience (the gateway's client id) and expiry check out; jose's error otherwise. */
async function verifiedClaims(token: string, keys: ReturnType<typeof createRemoteJWKSet>, sso: SsoSettings): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, keys, {
    issuer: sso.issuer,
    audience: sso.clientId,
    algorithms: ALGORITHMS,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ["sub", "exp"],
  });
  return payload;
}

/** Verifies the ID token of an SSO login (issuer, audience, signature, expiry, nonce); throws the 401 naming what is wrong. */
export async function verifyIdToken(idp: IdpTokens, idToken: string, nonce: string): Promise<IdpUser> {
  const sso = idp.settings;
  let claims: JWTPayload;
  try {
    claims = await verifiedClaims(idToken, await idp.keySet(), sso);
  } catch (err) {
    throw new GatewayError("unauthenticated", `the identity provider's ID token was refused: ${reasonOf(err, sso)}`, { type: "sso_login_failed", httpStatus: 401 });
  }
  if (claims["nonce"] !== nonce) throw new GatewayError("unauthenticated", "the identity provider's ID token does not carry this login's nonce", { type: "sso_login_failed", httpStatus: 401 });
  return userOfClaims(claims, sso);
}

/** Reads the bearer value of an Authorization header that looks like a JWT (three dot-separated parts), else null. */
export function jwtBearer(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const token = match?.[1];
  return token !== undefined && token.split(".").length === 3 ? token : null;
}

/**
 * The 401 for a request whose bearer is a JWT but not an acceptable IdP token: one of the issuer that does
 * not verify, or one of another issuer that is not a virtual key either. Null lets the request through.
 */
export async function bearerRefusal(idp: IdpTokens, authorization: string | null | undefined, isVirtualKey: (value: string) => boolean): Promise<GatewayError | null> {
  if (!idp.enabled) return null;
  const token = jwtBearer(authorization);
  if (token === null) return null;
  if (token.length > MAX_IDP_TOKEN_CHARS && !isVirtualKey(token)) return idpTokenRefused(`it is ${token.length} characters long; the limit is ${MAX_IDP_TOKEN_CHARS}`);
  const iss = unverifiedIssuer(token);
  if (iss === null || isVirtualKey(token)) return null;
  if (iss !== idp.settings.issuer) return idpTokenRefused(`it was issued by "${iss}", but this gateway accepts IdP tokens only from ${idp.settings.issuer}`);
  try {
    await idp.verify(token);
    return null;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}
