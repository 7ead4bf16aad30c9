/**
 * The SSO relying party: browser login against the configured OpenID provider with the authorization code
 * flow and PKCE (S256), then a gateway session named by the HttpOnly cookie `gw_session`. Pending logins and
 * sessions are stored in the database, so a login started on one node finishes on any node and its session
 * works on every node; only hashes of states and session ids are kept in clear, and the PKCE verifier,
 * nonce and IdP access token (kept for token_exchange clients) are encrypted. Sessions are also cached in
 * memory (the request path reads the cache only); other nodes' changes reach it through change
 * notifications. The ID token is checked with jose against the issuer's JWKS.
 */
import { createHash, randomBytes } from "node:crypto";
import { parseCookie, stringifySetCookie } from "cookie";
import { boundedCache } from "../../bounded-cache.js";
import { egressFetch } from "../../config/egress-connections.js";
import { GatewayError } from "../../errors.js";
import { insertRecord, SsoLoginRecord, SsoSessionRecord, type Store } from "../../store/index.js";
import type { SsoCaller } from "../inference/caller.js";
import { verifyIdToken, type IdpTokens, type IdpUser } from "./idp-tokens.js";
import { sha256Hex } from "../../sha256.js";

/** The session cookie's name. */
export const SESSION_COOKIE = "gw_session";

/** The Set-Cookie value of an SSO session (an empty value with Max-Age 0 clears it). */
export function sessionCookie(value: string, maxAgeS: number, secure: boolean): string {
  return browserCookie(SESSION_COOKIE, value, maxAgeS, secure);
}

/** The Set-Cookie value of a gateway cookie a browser keeps: HttpOnly, SameSite=Lax, for the whole gateway. */
export function browserCookie(name: string, value: string, maxAgeS: number, secure: boolean): string {
  return stringifySetCookie(name, value, { path: "/", httpOnly: true, sameSite: "lax", maxAge: maxAgeS, secure });
}
/** Where the provider sends the browser back. */
export const SSO_CALLBACK_PATH = "/api/sso/callback";
/** Where the browser starts an SSO login (GET, ?return_to=<path>). */
export const SSO_LOGIN_PATH = "/api/sso/login";
/** A login not finished within this is forgotten. */
const LOGIN_TTL_MS = 15 * 60_000;
/** The longest a session lasts, whatever the ID token says. */
const SESSION_MAX_MS = 12 * 60 * 60_000;
/** Pending logins and sessions remembered before the oldest are dropped. */
const MAX_ENTRIES = 10_000;
/** Bound on the token request. */
const TOKEN_TIMEOUT_MS = 10_000;

interface PendingLogin {
  verifier: string;
  nonce: string;
  returnTo: string;
  redirectUri: string;
}

interface Session {
  user: IdpUser;
  accessToken: string | null;
  expiresAt: number;
}

/** A finished login: the cookie to set and where to send the browser. */
export interface SsoLoginResult {
  sessionId: string;
  maxAgeS: number;
  returnTo: string;
}

function random(): string {
  return randomBytes(32).toString("base64url");
}

/** The value of one cookie in a Cookie header, or null. */
export function cookieValue(header: string | null | undefined, name: string): string | null {
  if (!header) return null;
  return parseCookie(header)[name] ?? null;
}

/** A return_to the gateway may redirect to: a path on this gateway, never another site. */
function safeReturnTo(value: string | null): string {
  if (value === null || value === "") return "/";
  if (!value.startsWith("/") || value.startsWith("//") || value.includes("\\")) {
    throw new GatewayError("invalid_argument", "return_to: must be a path on this gateway (starting with a single /)", { field: "return_to" });
  }
  return value;
}

function evictOldest<V>(map: Map<string, V>): void {
  if (map.size < MAX_ENTRIES) return;
  const first = map.keys().next();
  if (!first.done) map.delete(first.value);
}

function sessionOf(rec: SsoSessionRecord): Session {
  return { user: { ...rec.user }, accessToken: rec.secrets.accessToken, expiresAt: rec.expiresAt.getTime() };
}

/** Runs logins and holds the sessions they open. */
export class SsoLogin {
  /** Sessions by the hash of their id, as stored. */
  private readonly sessions = new Map<string, Session>();
  /** Hashes of ended sessions, so a read that raced the logout cannot bring one back. */
  private readonly ended = boundedCache<string, true>(MAX_ENTRIES);

  constructor(
    private readonly idp: IdpTokens,
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /** Loads the stored sessions that have not expired (start-up, and after missed change notifications). */
  async load(): Promise<void> {
    const records = await this.store.fork().find(SsoSessionRecord, { expiresAt: { $gt: new Date(this.now()) } }, { orderBy: { expiresAt: "desc" }, limit: MAX_ENTRIES });
    this.sessions.clear();
    for (const rec of records) if (!this.ended.has(rec.idHash)) this.sessions.set(rec.idHash, sessionOf(rec));
  }

  /** Another node opened or ended a session: the cache takes the row as stored. */
  async sessionChanged(idHash: string): Promise<void> {
    const rec = await this.store.fork().findOne(SsoSessionRecord, { idHash });
    if (!rec || this.ended.has(idHash)) {
      this.sessions.delete(idHash);
      return;
    }
    evictOldest(this.sessions);
    this.sessions.set(idHash, sessionOf(rec));
  }

  private requireEnabled(): void {
    if (!this.idp.enabled) {
      throw new GatewayError("failed_precondition", "single sign-on is not configured: set sso.issuer and sso.client_id in the config file", { type: "sso_not_configured" });
    }
  }

  /** Starts a login; answers the provider's authorization URL to redirect the browser to. */
  async begin(returnTo: string | null, base: string): Promise<string> {
    this.requireEnabled();
    const target = safeReturnTo(returnTo);
    const { authorizationEndpoint } = await this.idp.metadata();
    if (authorizationEndpoint === null) throw new GatewayError("unavailable", "the SSO issuer's discovery document names no authorization_endpoint", { type: "sso_discovery_failed" });
    const state = random();
    const login: PendingLogin = { verifier: random(), nonce: random(), returnTo: target, redirectUri: `${base}${SSO_CALLBACK_PATH}` };
    const em = this.store.fork();
    const now = this.now();
    // Logins never finished are dropped after their 15 minutes and one more (a late callback is told it expired meanwhile).
    await em.nativeDelete(SsoLoginRecord, { expiresAt: { $lt: new Date(now - LOGIN_TTL_MS) } });
    const record = em.create(SsoLoginRecord, {
      stateHash: sha256Hex(state),
      secrets: { verifier: login.verifier, nonce: login.nonce },
      returnTo: login.returnTo,
      redirectUri: login.redirectUri,
      expiresAt: new Date(now + LOGIN_TTL_MS),
    });
    await insertRecord(em, record);
    const sso = this.idp.settings;
    const url = new URL(authorizationEndpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", sso.clientId);
    url.searchParams.set("redirect_uri", login.redirectUri);
    url.searchParams.set("scope", sso.scopes.join(" "));
    url.searchParams.set("state", state);
    url.searchParams.set("nonce", login.nonce);
    url.searchParams.set("code_challenge", createHash("sha256").update(login.verifier).digest("base64url"));
    url.searchParams.set("code_challenge_method", "S256");
    return url.href;
  }

  /** Finishes a login from the callback's query: exchanges the code, checks the ID token, opens a session. */
  async finish(query: URLSearchParams): Promise<SsoLoginResult> {
    this.requireEnabled();
    const state = query.get("state") ?? "";
    const em = this.store.fork();
    const stateHash = sha256Hex(state);
    const rec = state === "" ? null : await em.findOne(SsoLoginRecord, { stateHash });
    // Deleting the row spends the state: of two callbacks racing with it (on any nodes) one deletes it.
    if (rec === null || (await em.nativeDelete(SsoLoginRecord, { stateHash })) !== 1) {
      throw new GatewayError("invalid_argument", "unknown or already used login state: start again at /api/sso/login", { type: "sso_state_invalid" });
    }
    const login: PendingLogin = { verifier: rec.secrets.verifier, nonce: rec.secrets.nonce, returnTo: rec.returnTo, redirectUri: rec.redirectUri };
    if (rec.expiresAt.getTime() <= this.now()) throw new GatewayError("failed_precondition", "the login took longer than 15 minutes: start again at /api/sso/login", { type: "sso_login_expired", httpStatus: 410 });
    const error = query.get("error");
    if (error !== null) {
      const description = query.get("error_description");
      throw new GatewayError("permission_denied", `the identity provider did not sign you in (${error}${description ? `: ${description.slice(0, 300)}` : ""})`, { type: "sso_login_failed" });
    }
    const code = query.get("code");
    if (!code) throw new GatewayError("invalid_argument", "code: the callback carries no authorization code", { field: "code" });
    const tokens = await this.redeem(code, login);
    const user = await verifyIdToken(this.idp, tokens.idToken, login.nonce);
    const sessionId = random();
    // As long as the provider vouches for the user (the later of the ID token's and the access token's expiry), at most SESSION_MAX_MS.
    const now = this.now();
    const expiresAt = Math.min(now + SESSION_MAX_MS, Math.max(user.expiresAt, now + (tokens.expiresInS ?? 0) * 1000));
    const idHash = sha256Hex(sessionId);
    await em.nativeDelete(SsoSessionRecord, { expiresAt: { $lte: new Date(now) } });
    await insertRecord(em, em.create(SsoSessionRecord, { idHash, user: { ...user }, secrets: { accessToken: tokens.accessToken }, expiresAt: new Date(expiresAt) }));
    evictOldest(this.sessions);
    this.sessions.set(idHash, { user, accessToken: tokens.accessToken, expiresAt });
    return { sessionId, maxAgeS: Math.max(1, Math.floor((expiresAt - this.now()) / 1000)), returnTo: login.returnTo };
  }

  private async redeem(code: string, login: PendingLogin): Promise<{ idToken: string; accessToken: string | null; expiresInS: number | null }> {
    const { tokenEndpoint } = await this.idp.metadata();
    if (tokenEndpoint === null) throw new GatewayError("unavailable", "the SSO issuer's discovery document names no token_endpoint", { type: "sso_discovery_failed" });
    const sso = this.idp.settings;
    const form = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: login.redirectUri, code_verifier: login.verifier });
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
    if (sso.clientSecret !== "") {
      headers["authorization"] = `Basic ${Buffer.from(`${encodeURIComponent(sso.clientId)}:${encodeURIComponent(sso.clientSecret)}`).toString("base64")}`;
    } else {
      form.set("client_id", sso.clientId);
    }
    let body: Record<string, unknown> = {};
    let status: number;
    try {
      const res = await egressFetch(tokenEndpoint, { method: "POST", headers, body: form, signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS) });
      status = res.status;
      const parsed: unknown = await res.json().catch(() => ({}));
      if (parsed !== null && typeof parsed === "object") body = parsed as Record<string, unknown>;
    } catch (err) {
      throw new GatewayError("unavailable", `the SSO token endpoint could not be reached: ${err instanceof Error ? err.message : String(err)}`, { type: "sso_login_failed" });
    }
    if (status < 200 || status >= 300) {
      const reason = typeof body["error"] === "string" ? body["error"] : `HTTP ${status}`;
      throw new GatewayError("permission_denied", `the identity provider refused the login code (${reason})`, { type: "sso_login_failed" });
    }
    const idToken = body["id_token"];
    if (typeof idToken !== "string") throw new GatewayError("unavailable", "the identity provider answered without an id_token (is the openid scope in sso.scopes?)", { type: "sso_login_failed" });
    const accessToken = typeof body["access_token"] === "string" ? body["access_token"] : null;
    const expiresIn = typeof body["expires_in"] === "number" ? body["expires_in"] : null;
    return { idToken, accessToken, expiresInS: expiresIn };
  }

  /** The live session a Cookie header names, or null. */
  private session(cookieHeader: string | null | undefined): Session | null {
    if (!this.idp.enabled) return null;
    const id = cookieValue(cookieHeader, SESSION_COOKIE);
    if (id === null || id === "") return null;
    const hash = sha256Hex(id);
    const session = this.sessions.get(hash);
    if (!session) return null;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(hash);
      return null;
    }
    return session;
  }

  /** The signed-in user behind a Cookie header, as a caller identity, or null. */
  caller(cookieHeader: string | null | undefined): SsoCaller | null {
    const session = this.session(cookieHeader);
    return session ? { id: session.user.id, name: session.user.name, token: session.accessToken } : null;
  }

  /** The signed-in user behind a Cookie header with their IdP access token, or null. */
  signedIn(cookieHeader: string | null | undefined): { user: IdpUser; token: string | null } | null {
    const session = this.session(cookieHeader);
    return session ? { user: session.user, token: session.accessToken } : null;
  }

  /** A session ended (logged out on another node, or expired and removed): it is refused from now on. */
  sessionEnded(idHash: string): void {
    this.sessions.delete(idHash);
    // Session ids are random and never come back, so remembering them is only bounded, never wrong.
    this.ended.set(idHash, true);
  }

  /** Ends the session a Cookie header names on every node (unknown ones are ignored). */
  async logout(cookieHeader: string | null | undefined): Promise<void> {
    const id = cookieValue(cookieHeader, SESSION_COOKIE);
    if (id === null) return;
    const idHash = sha256Hex(id);
    this.sessionEnded(idHash);
    await this.store.fork().nativeDelete(SsoSessionRecord, { idHash });
  }
}
