/**
 * Trades a caller's own IdP access token for a short-lived token of a token_exchange MCP server, at the
 * authorization server's token endpoint: RFC 8693 token exchange, or Entra ID's on-behalf-of form.
 * Exchanged tokens are kept in memory only, per (client, identity, hash of the subject token), until
 * 30 seconds before they expire (5 minutes when the answer gives no expires_in). The caller's token goes
 * to the authorization server only, never to the MCP server, and neither token reaches an error message.
 */
import { egressFetch } from "../../config/egress-connections.js";
import { GatewayError } from "../../errors.js";
import type { CallerIdentity } from "../credentials/identity.js";
import type { TokenExchangeSpec } from "./token-exchange-config.js";
import { sha256Hex } from "../../sha256.js";

/** How long before its expiry an exchanged token stops being reused. */
const EXPIRY_MARGIN_MS = 30_000;
/** Lifetime assumed for an answer without expires_in. */
const DEFAULT_LIFETIME_MS = 5 * 60_000;
/** Bound on one exchange request. */
const EXCHANGE_TIMEOUT_MS = 10_000;
/** Exchanged tokens remembered before the cache starts over. */
const MAX_CACHED = 10_000;

const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

/** What the exchanger needs from outside the MCP layer. */
export interface TokenExchangerDeps {
  /** The SSO issuer's token endpoint, used when a client names no authorization_server_url (null: SSO off). */
  defaultTokenEndpoint: () => Promise<string | null>;
  now: () => number;
}

/** An exchange the authorization server refused or that could not be made; the message names why, never a token. */
export class TokenExchangeError extends GatewayError {
  constructor(message: string) {
    super("failed_precondition", message, { type: "token_exchange_failed", httpStatus: 422 });
    this.name = "TokenExchangeError";
  }
}

/** The cache slot of one (client, identity, subject token); a client's slots share the `${clientId}\0` prefix. */
function cacheKey(clientId: string, identity: CallerIdentity, subjectToken: string): string {
  return `${clientId}\u0000${identity.kind}:${identity.id}\u0000${sha256Hex(subjectToken)}`;
}

/** Exchanges and caches upstream tokens. */
export class TokenExchanger {
  private readonly cache = new Map<string, { token: string; expiresAt: number }>();

  constructor(private readonly deps: TokenExchangerDeps) {}

  /** The upstream token for this caller: from the cache while it is fresh, else exchanged now. */
  async tokenFor(clientId: string, spec: TokenExchangeSpec, identity: CallerIdentity, subjectToken: string): Promise<string> {
    const key = cacheKey(clientId, identity, subjectToken);
    const now = this.deps.now();
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > now) return cached.token;
    const { token, expiresInS } = await this.exchange(spec, subjectToken);
    const lifetime = expiresInS !== null ? expiresInS * 1000 - EXPIRY_MARGIN_MS : DEFAULT_LIFETIME_MS;
    if (lifetime > 0) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(key, { token, expiresAt: now + lifetime });
    }
    return token;
  }

  /** Forgets the token exchanged for one caller and subject token (the upstream rejected it). */
  forget(clientId: string, identity: CallerIdentity, subjectToken: string): void {
    this.cache.delete(cacheKey(clientId, identity, subjectToken));
  }

  /** Forgets every token exchanged for a client (changed or deleted). */
  forgetClient(clientId: string): void {
    const prefix = `${clientId}\u0000`;
    for (const key of this.cache.keys()) if (key.startsWith(prefix)) this.cache.delete(key);
  }

  /** Runs one exchange, uncached (verify-exchange and cache misses). */
  async exchange(spec: TokenExchangeSpec, subjectToken: string): Promise<{ token: string; expiresInS: number | null }> {
    const endpoint = spec.authorizationServerUrl !== "" ? spec.authorizationServerUrl : await this.deps.defaultTokenEndpoint();
    if (endpoint === null) {
      throw new TokenExchangeError("token_exchange has no authorization_server_url and no SSO issuer is configured (sso.issuer) whose token endpoint could be used");
    }
    const form = new URLSearchParams();
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
    if (spec.grantStyle === "entra_obo") {
      form.set("grant_type", JWT_BEARER_GRANT);
      form.set("assertion", subjectToken);
      form.set("requested_token_use", "on_behalf_of");
      form.set("scope", spec.scopes.length > 0 ? spec.scopes.join(" ") : `${spec.audience}/.default`);
      form.set("client_id", spec.clientId);
      if (spec.clientSecret !== "") form.set("client_secret", spec.clientSecret);
    } else {
      form.set("grant_type", TOKEN_EXCHANGE_GRANT);
      form.set("subject_token", subjectToken);
      form.set("subject_token_type", ACCESS_TOKEN_TYPE);
      form.set("audience", spec.audience);
      if (spec.scopes.length > 0) form.set("scope", spec.scopes.join(" "));
      if (spec.clientSecret !== "") {
        // client_secret_basic: RFC 6749 form-encodes both parts before joining them.
        const basic = `${encodeURIComponent(spec.clientId)}:${encodeURIComponent(spec.clientSecret)}`;
        headers["authorization"] = `Basic ${Buffer.from(basic).toString("base64")}`;
      } else {
        form.set("client_id", spec.clientId);
      }
    }
    let res: Response;
    try {
      res = await egressFetch(endpoint, { method: "POST", headers, body: form, signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS) });
    } catch (err) {
      throw new TokenExchangeError(`the token endpoint ${endpoint} could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await res.text().catch(() => "");
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object") body = parsed as Record<string, unknown>;
    } catch {
      // Not JSON: reported below by status.
    }
    if (!res.ok) {
      const code = typeof body["error"] === "string" ? body["error"] : `HTTP ${res.status}`;
      const description = typeof body["error_description"] === "string" ? `: ${body["error_description"].slice(0, 300)}` : "";
      throw new TokenExchangeError(`the identity provider refused the token exchange for audience "${spec.audience}" (${code}${description})`);
    }
    const token = body["access_token"];
    if (typeof token !== "string" || token === "") throw new TokenExchangeError(`the token endpoint ${endpoint} answered without an access_token`);
    const expiresIn = body["expires_in"];
    return { token, expiresInS: typeof expiresIn === "number" && Number.isFinite(expiresIn) ? expiresIn : null };
  }
}
