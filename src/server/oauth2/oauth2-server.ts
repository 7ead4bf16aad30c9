/**
 * The gateway as an OAuth 2.1 authorization server for /mcp clients (client.mcp_server_auth_mode `oauth`
 * or `both`), built on oidc-provider and mounted under /oauth2 on the one port: RFC 8414 and OpenID
 * discovery, RFC 9728 protected-resource metadata for /mcp, dynamic client registration, authorization
 * code with PKCE S256, rotating refresh tokens, and JWT access tokens whose audience is the /mcp URL. The
 * consent page binds a grant to the virtual key the user types in; a token then acts as that key. Every
 * authorization goes through the consent page: the provider's session in a browser never grants a later
 * authorization on its own. Tokens are checked against the signing keys and the live grants in memory,
 * never the database.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createLocalJWKSet, jwtVerify, type JWK } from "jose";
import type { Configuration, KoaContextWithOIDC, default as Provider } from "oidc-provider";
import type { VirtualKey } from "../../routing/types.js";
import type { VirtualKeyRegistry } from "../../routing/virtual-key-registry.js";
import type { Logger } from "../../telemetry/logger.js";
import { sendError, sendJson, type Req, type Res } from "../node-http.js";
import { readBodyBytes } from "../rest/request-body.js";
import { renderConsentPage } from "./consent-page.js";
import type { OAuth2Secrets, OAuth2Store } from "../../services/oauth2/oauth2-store.js";

/** Where oidc-provider is mounted: the issuer is `<origin>/oauth2`. */
export const OAUTH2_PREFIX = "/oauth2";
/** RFC 9728 protected-resource metadata (with and without the resource's path). */
export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";
/** RFC 8414 authorization-server metadata (with and without the issuer's path). */
export const AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server";
const OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration";
/** The consent page, one per interaction. */
const INTERACTION_PATH = "/interaction/";
/** The one scope of the /mcp resource. */
const MCP_SCOPE = "mcp";
/** Every scope a client may ask for. */
const SCOPES = ["openid", "offline_access", MCP_SCOPE];
/** Access tokens live an hour; refresh tokens rotate on every use. */
const ACCESS_TOKEN_TTL_S = 3600;
const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;
const GRANT_TTL_S = 30 * 24 * 3600;

/** What the server needs. */
export interface OAuth2ServerOptions {
  store: OAuth2Store;
  secrets: OAuth2Secrets;
  virtualKeys: VirtualKeyRegistry;
  logger: Logger;
  maxBodyBytes: number;
  /** The path of the protected resource (/mcp). */
  resourcePath: string;
}

/** Who a valid access token acts as. */
export interface TokenSubject {
  key: VirtualKey;
  grantId: string;
}

/** The authorization server: HTTP routes plus the token check /mcp uses. */
export class OAuth2Server {
  private readonly providers = new Map<string, Promise<Provider>>();
  private readonly jwks: ReturnType<typeof createLocalJWKSet>;

  constructor(private readonly opts: OAuth2ServerOptions) {
    const publicKeys = opts.secrets.jwks.keys.map(({ d: _d, ...pub }) => pub as JWK);
    this.jwks = createLocalJWKSet({ keys: publicKeys });
  }

  /** Whether `path` is one of the server's routes. */
  handles(path: string): boolean {
    return path === OAUTH2_PREFIX || path.startsWith(`${OAUTH2_PREFIX}/`) || path.startsWith(PROTECTED_RESOURCE_PATH) || path.startsWith(AUTHORIZATION_SERVER_PATH) || path.startsWith(OPENID_CONFIGURATION_PATH);
  }

  /** The `WWW-Authenticate` value of a 401 on the resource. */
  challenge(origin: string, error?: string): string {
    const metadata = `${origin}${PROTECTED_RESOURCE_PATH}${this.opts.resourcePath}`;
    return `Bearer resource_metadata="${metadata}"${error ? `, error="${error}"` : ""}`;
  }

  /** The subject of a valid access token for this origin's /mcp, or null (bad signature, issuer, audience, expiry, or a revoked grant). */
  async verify(token: string, origin: string): Promise<TokenSubject | null> {
    try {
      const { payload } = await jwtVerify(token, this.jwks, { issuer: `${origin}${OAUTH2_PREFIX}`, audience: `${origin}${this.opts.resourcePath}`, algorithms: ["ES256"], typ: "at+jwt" });
      const grantId = payload["gid"];
      if (typeof payload.sub !== "string" || typeof grantId !== "string" || !this.opts.store.grantLive(grantId)) return null;
      const key = this.opts.virtualKeys.byId(payload.sub);
      return key === null || !key.isActive ? null : { key, grantId };
    } catch {
      return null;
    }
  }

  /** Serves one request to a path `handles` accepted. */
  handle(req: Req, res: Res, path: string, origin: string): void {
    this.serve(req, res, path, origin).catch((err: unknown) => {
      this.opts.logger.error({ err, path }, "the OAuth authorization server failed");
      if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
      else res.end();
    });
  }

  private async serve(req: Req, res: Res, path: string, origin: string): Promise<void> {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (Number.isFinite(declared) && declared > this.opts.maxBodyBytes) {
      sendError(res, 413, "payload_too_large", `request body over the ${this.opts.maxBodyBytes}-byte limit`);
      return;
    }
    if (path.startsWith(PROTECTED_RESOURCE_PATH)) {
      const resource = `${origin}${this.opts.resourcePath}`;
      sendJson(res, 200, { resource, authorization_servers: [`${origin}${OAUTH2_PREFIX}`], scopes_supported: [MCP_SCOPE], bearer_methods_supported: ["header"] });
      return;
    }
    const provider = await this.providerFor(origin);
    if (path.startsWith(AUTHORIZATION_SERVER_PATH) || path.startsWith(OPENID_CONFIGURATION_PATH)) {
      // Both discovery documents are the provider's own metadata.
      this.forward(provider, req, res, OPENID_CONFIGURATION_PATH);
      return;
    }
    const inner = path.slice(OAUTH2_PREFIX.length) || "/";
    if (inner.startsWith(INTERACTION_PATH)) {
      await this.consent(provider, req, res, origin);
      return;
    }
    const query = (req.url ?? "").slice(path.length);
    this.forward(provider, req, res, inner + query);
  }

  private forward(provider: Provider, req: Req, res: Res, url: string): void {
    const nodeReq = req as IncomingMessage & { originalUrl?: string };
    nodeReq.originalUrl = `${OAUTH2_PREFIX}${url}`;
    nodeReq.url = url;
    void provider.callback()(nodeReq, res as ServerResponse);
  }

  /** GET shows the form; POST checks the virtual key and finishes the interaction bound to it. */
  private async consent(provider: Provider, req: Req, res: Res, origin: string): Promise<void> {
    const nodeReq = req as IncomingMessage;
    const nodeRes = res as ServerResponse;
    let details: Awaited<ReturnType<Provider["interactionDetails"]>>;
    try {
      details = await provider.interactionDetails(nodeReq, nodeRes);
    } catch {
      sendHtml(res, 400, renderConsentPage({ error: "This authorization request has expired or was already used. Start again from your MCP client." }));
      return;
    }
    const client = await provider.Client.find(String(details.params["client_id"] ?? ""));
    const clientName = client?.clientName ?? String(details.params["client_id"] ?? "an MCP client");
    if (req.method === "GET") {
      sendHtml(res, 200, renderConsentPage({ clientName, action: `${OAUTH2_PREFIX}${INTERACTION_PATH}${details.uid}` }));
      return;
    }
    if (req.method !== "POST") {
      sendError(res, 405, "method_not_allowed", `method ${req.method ?? ""} is not allowed here; use GET or POST`);
      return;
    }
    const form = new URLSearchParams((await readBodyBytes(req, this.opts.maxBodyBytes)).toString("utf8"));
    if (form.get("action") === "deny") {
      await provider.interactionFinished(nodeReq, nodeRes, { error: "access_denied", error_description: "the user denied access" }, { mergeWithLastSubmission: false });
      return;
    }
    const key = this.keyOf(form.get("virtual_key")?.trim() ?? "");
    if (key === null || !key.isActive) {
      const error = key === null ? "That is not a virtual key of this gateway. Paste the key's value (sk-gw-...), not its name or id." : `Virtual key "${key.name}" is switched off; ask an admin to activate it.`;
      sendHtml(res, 400, renderConsentPage({ clientName, action: `${OAUTH2_PREFIX}${INTERACTION_PATH}${details.uid}`, error }));
      return;
    }
    const accountId = key.id;
    const grant = new provider.Grant({ accountId, clientId: String(details.params["client_id"]) });
    const requested = String(details.params["scope"] ?? "").split(" ").filter((s) => s !== "");
    // The provider checks requested scopes against the grant's OpenID scopes and the resource's against its resource scopes.
    const scopes = requested.filter((s) => SCOPES.includes(s));
    if (scopes.length > 0) grant.addOIDCScope(scopes.join(" "));
    const resource = details.params["resource"];
    grant.addResourceScope(typeof resource === "string" && resource !== "" ? resource : `${origin}${this.opts.resourcePath}`, MCP_SCOPE);
    const grantId = await grant.save();
    await provider.interactionFinished(nodeReq, nodeRes, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  /** The key with this value, or null (none typed, or none such). */
  private keyOf(value: string): VirtualKey | null {
    try {
      return this.opts.virtualKeys.resolve(value);
    } catch {
      return null;
    }
  }

  private providerFor(origin: string): Promise<Provider> {
    let provider = this.providers.get(origin);
    if (provider === undefined) {
      provider = this.createProvider(origin);
      // A failed start is tried again by the next request.
      provider.catch(() => this.providers.delete(origin));
      this.providers.set(origin, provider);
    }
    return provider;
  }

  /** oidc-provider is loaded on first use: a gateway in `headers` mode never pays for it. */
  private async createProvider(origin: string): Promise<Provider> {
    const { default: OidcProvider, errors } = await import("oidc-provider");
    const resource = `${origin}${this.opts.resourcePath}`;
    const store = this.opts.store;
    const configuration: Configuration = {
      adapter: (name: string) => store.adapter(name),
      jwks: this.opts.secrets.jwks as Configuration["jwks"],
      cookies: { keys: this.opts.secrets.cookieKeys },
      clients: [],
      scopes: SCOPES,
      pkce: { required: () => true },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: KoaContextWithOIDC, indicator: string) => {
            if (indicator !== resource) throw new errors.InvalidTarget(`the only resource of this server is ${resource}`);
            return { scope: MCP_SCOPE, audience: resource, accessTokenTTL: ACCESS_TOKEN_TTL_S, accessTokenFormat: "jwt", jwt: { sign: { alg: "ES256" } } };
          },
        },
      },
      clientDefaults: { grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none", id_token_signed_response_alg: "ES256" },
      interactions: { url: (_ctx: KoaContextWithOIDC, interaction: { uid: string }) => `${OAUTH2_PREFIX}${INTERACTION_PATH}${interaction.uid}` },
      findAccount: (_ctx: KoaContextWithOIDC, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
      extraTokenClaims: (_ctx: KoaContextWithOIDC, token: { kind: string; grantId?: string }) => (token.kind === "AccessToken" && token.grantId ? { gid: token.grantId } : undefined),
      issueRefreshToken: (_ctx: KoaContextWithOIDC, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed("refresh_token"),
      rotateRefreshToken: true,
      ttl: { AccessToken: ACCESS_TOKEN_TTL_S, RefreshToken: REFRESH_TOKEN_TTL_S, Grant: GRANT_TTL_S, Session: GRANT_TTL_S, Interaction: 3600, AuthorizationCode: 60 },
      // Only the grant the consent page just made counts. The provider also remembers, in its session cookie,
      // the key a browser consented with before; reusing that grant would let whoever uses the browser next
      // sign a client in as that key without the consent page, so every authorization asks for the key again.
      loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
        const grantId = ctx.oidc.result?.consent?.grantId;
        return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
      },
    } as Configuration;
    const provider = new OidcProvider(`${origin}${OAUTH2_PREFIX}`, configuration);
    provider.on("server_error", (_ctx: unknown, err: Error) => this.opts.logger.error({ err }, "OAuth authorization server error"));
    return provider;
  }
}

function sendHtml(res: Res, status: number, html: string): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(html), "cache-control": "no-store", "x-frame-options": "DENY", "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'" });
  res.end(html);
}
