/**
 * The OAuth 2.1 authorization code flow with an upstream MCP server's authorization server, run by the MCP
 * SDK's client-side `auth()`: discovery (RFC 9728 protected-resource metadata from the 401's
 * WWW-Authenticate or the well-known paths, then RFC 8414 or OpenID discovery), dynamic client
 * registration (RFC 7591) when no client_id is configured, PKCE S256, and the RFC 8707 `resource`.
 * An `OAuthClientProvider` held for one step carries what the gateway stores between the steps; nothing
 * here touches the database. Every network step is bounded by DISCOVERY_TIMEOUT_MS.
 */
import { randomBytes } from "node:crypto";
import {
  auth,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { OAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { AuthorizationServerMetadata, OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { egressFetch } from "../../config/egress-connections.js";
import { GatewayError } from "../../errors.js";
import { upstreamMessage } from "../upstream-errors.js";
import { endpointProblem, type OauthConfigSpec } from "./oauth-config.js";

/** Each discovery, registration and token request gives up after this long. */
export const DISCOVERY_TIMEOUT_MS = 10_000;

/** What the flow needs from the client. */
export interface AuthorizationTarget {
  /** The MCP server URL (connection_string). */
  serverUrl: string;
  config: OauthConfigSpec;
  /** The gateway's callback URL. */
  redirectUri: string;
  /** Shown to the authorization server as the client name at registration. */
  clientName: string;
}

/** Everything the gateway keeps between the start of a flow and its callback. */
export interface StartedAuthorization {
  authorizeUrl: string;
  /** The single-use state value (128 bits). */
  state: string;
  codeVerifier: string;
  clientInformation: OAuthClientInformationMixed;
  discovery: OAuthDiscoveryState;
  resource: string;
}

/** What a flow's code exchange and later refreshes need. */
export interface GrantContext {
  serverUrl: string;
  redirectUri: string;
  discovery: OAuthDiscoveryState;
  clientInformation: OAuthClientInformationMixed;
  resource: string;
}

/** A failure of the authorization server or of discovery: the message is safe to show and log. */
export function oauthFailure(step: string, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const detail = err instanceof OAuthError ? `${err.errorCode}: ${err.message}` : upstreamMessage(err);
  return new GatewayError("failed_precondition", upstreamMessage(`${step} failed: ${detail}`), { type: "upstream_oauth_failed", httpStatus: 422 });
}

/** True when the authorization server said the grant or the client is no longer good: only a new consent helps. */
export function isDeadGrant(err: unknown): boolean {
  return err instanceof OAuthError && ["invalid_grant", "invalid_client", "unauthorized_client"].includes(err.errorCode);
}

/** A fetch bounded by the discovery timeout (and by the caller's signal) whose connections obey network.egress. */
export function boundedFetch(base: FetchLike = egressFetch, timeoutMs = DISCOVERY_TIMEOUT_MS): FetchLike {
  return (url, init) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    return base(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline });
  };
}

/**
 * One step's OAuthClientProvider: answers `auth()` from the values the gateway holds and records what
 * `auth()` hands back (registration, verifier, authorization URL, tokens).
 */
class StepProvider implements OAuthClientProvider {
  clientInfo: OAuthClientInformationMixed | undefined;
  verifier = "";
  authorizationUrl: URL | undefined;
  savedTokens: OAuthTokens | undefined;

  constructor(
    private readonly redirectUri: string,
    private readonly metadata: OAuthClientMetadata,
    private readonly discovery: OAuthDiscoveryState,
    private readonly resource: string,
    private readonly stateValue: string,
    clientInfo: OAuthClientInformationMixed | undefined,
  ) {
    this.clientInfo = clientInfo;
  }

  get redirectUrl(): string {
    return this.redirectUri;
  }
  get clientMetadata(): OAuthClientMetadata {
    return this.metadata;
  }
  state(): string {
    return this.stateValue;
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.clientInfo;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.clientInfo = info;
  }
  tokens(): undefined {
    // A new authorization never starts from stored tokens: refreshes run apart (refreshTokens).
    return undefined;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
  discoveryState(): OAuthDiscoveryState {
    return this.discovery;
  }
  saveDiscoveryState(): void {
    // The gateway discovered before calling auth() and keeps its own copy.
  }
  async validateResourceURL(): Promise<URL> {
    return new URL(this.resource);
  }
}

/** The client metadata registered dynamically: a public client (PKCE) with our callback and refresh tokens. */
function clientMetadataOf(target: AuthorizationTarget, scope: string | undefined): OAuthClientMetadata {
  return {
    client_name: target.clientName,
    redirect_uris: [target.redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(scope ? { scope } : {}),
  };
}

/** Asks the MCP server, without credentials, what its 401 says (RFC 9728 resource_metadata and scope). */
async function probe(serverUrl: string, fetchFn: FetchLike): Promise<{ resourceMetadataUrl?: URL; scope?: string }> {
  try {
    const res = await fetchFn(serverUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": LATEST_PROTOCOL_VERSION },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "gw", version: "0.1.0" } },
      }),
    });
    await res.body?.cancel().catch(() => undefined);
    if (res.status !== 401 && res.status !== 403) return {};
    const params = extractWWWAuthenticateParams(res);
    return { ...(params.resourceMetadataUrl ? { resourceMetadataUrl: params.resourceMetadataUrl } : {}), ...(params.scope ? { scope: params.scope } : {}) };
  } catch {
    // A server that cannot be reached here is reported by discovery, which names the URLs it tried.
    return {};
  }
}

/** The authorization server's metadata as the flow uses it: discovered, with the configured endpoints over it. */
async function discover(target: AuthorizationTarget, fetchFn: FetchLike): Promise<{ discovery: OAuthDiscoveryState; headerScope?: string }> {
  const cfg = target.config;
  if (cfg.authorizeUrl !== "" && cfg.tokenUrl !== "") {
    // Both endpoints configured: nothing to discover.
    const metadata: AuthorizationServerMetadata = {
      issuer: new URL(cfg.tokenUrl).origin,
      authorization_endpoint: cfg.authorizeUrl,
      token_endpoint: cfg.tokenUrl,
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
      ...(cfg.registrationUrl ? { registration_endpoint: cfg.registrationUrl } : {}),
      ...(cfg.revocationUrl ? { revocation_endpoint: cfg.revocationUrl } : {}),
    };
    return { discovery: { authorizationServerUrl: metadata.issuer, authorizationServerMetadata: metadata } };
  }
  const hint = await probe(target.serverUrl, fetchFn);
  let info;
  try {
    info = await discoverOAuthServerInfo(target.serverUrl, { ...(hint.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl } : {}), fetchFn });
  } catch (err) {
    throw oauthFailure(`OAuth discovery for ${target.serverUrl}`, err);
  }
  const found = info.authorizationServerMetadata;
  if (!found) {
    throw new GatewayError(
      "failed_precondition",
      `OAuth discovery for ${target.serverUrl} found no authorization server metadata at ${info.authorizationServerUrl} (RFC 8414 or OpenID discovery); set oauth_config.authorize_url and oauth_config.token_url`,
      { type: "upstream_oauth_failed", httpStatus: 422 },
    );
  }
  const metadata = {
    ...found,
    ...(cfg.authorizeUrl ? { authorization_endpoint: cfg.authorizeUrl } : {}),
    ...(cfg.tokenUrl ? { token_endpoint: cfg.tokenUrl } : {}),
    ...(cfg.registrationUrl ? { registration_endpoint: cfg.registrationUrl } : {}),
    ...(cfg.revocationUrl ? { revocation_endpoint: cfg.revocationUrl } : {}),
  } as AuthorizationServerMetadata;
  return {
    discovery: {
      authorizationServerUrl: info.authorizationServerUrl,
      authorizationServerMetadata: metadata,
      ...(info.resourceMetadata ? { resourceMetadata: info.resourceMetadata } : {}),
      ...(hint.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl.href } : {}),
    },
    ...(hint.scope ? { headerScope: hint.scope } : {}),
  };
}

/** The RFC 7009 endpoint: RFC 8414 metadata names it, OpenID discovery metadata may carry it too. */
export function revocationEndpointOf(metadata: AuthorizationServerMetadata): string | undefined {
  const value = (metadata as { revocation_endpoint?: unknown }).revocation_endpoint;
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Refuses discovered endpoints a code, a token or a secret must not travel to. */
function checkEndpoints(metadata: AuthorizationServerMetadata): void {
  for (const [name, value] of [
    ["authorization endpoint", metadata.authorization_endpoint],
    ["token endpoint", metadata.token_endpoint],
    ["registration endpoint", metadata.registration_endpoint],
    ["revocation endpoint", revocationEndpointOf(metadata)],
  ] as const) {
    if (!value) continue;
    const problem = endpointProblem(value);
    if (problem) throw new GatewayError("failed_precondition", `the authorization server's ${name} ${problem}`, { type: "upstream_oauth_failed", httpStatus: 422 });
  }
}

/**
 * Starts an authorization: discovery, registration when needed, PKCE; returns the URL an admin opens and
 * what the callback needs. Throws a 422 upstream_oauth_failed naming the step and the cause.
 */
export async function startAuthorization(target: AuthorizationTarget, fetchFn: FetchLike = boundedFetch()): Promise<StartedAuthorization> {
  const { discovery, headerScope } = await discover(target, fetchFn);
  const metadata = discovery.authorizationServerMetadata;
  if (metadata) checkEndpoints(metadata);
  const cfg = target.config;
  if (cfg.clientId === "" && !metadata?.registration_endpoint) {
    throw new GatewayError(
      "failed_precondition",
      `the authorization server ${discovery.authorizationServerUrl} offers no dynamic client registration (no registration_endpoint); register the gateway there with the redirect URI ${target.redirectUri} and set oauth_config.client_id`,
      { type: "upstream_oauth_failed", httpStatus: 422 },
    );
  }
  // Scopes: the configuration's, else the 401's, else the resource metadata's (auth() picks those), else the server's.
  const scope = cfg.scopes.length > 0 ? cfg.scopes.join(" ") : headerScope;
  const fallbackScope = discovery.resourceMetadata?.scopes_supported?.length ? undefined : metadata?.scopes_supported?.join(" ");
  const configured: OAuthClientInformationMixed | undefined =
    cfg.clientId === "" ? undefined : { client_id: cfg.clientId, ...(cfg.clientSecret ? { client_secret: cfg.clientSecret } : {}) };
  const state = randomBytes(16).toString("base64url");
  const resource = cfg.resource || target.serverUrl;
  const provider = new StepProvider(target.redirectUri, clientMetadataOf(target, scope ?? fallbackScope), discovery, resource, state, configured);
  try {
    const result = await auth(provider, { serverUrl: target.serverUrl, ...(scope ? { scope } : {}), fetchFn });
    if (result !== "REDIRECT" || !provider.authorizationUrl || !provider.clientInfo) throw new Error("the SDK did not produce an authorization URL");
  } catch (err) {
    throw oauthFailure(cfg.clientId === "" ? "dynamic client registration" : "starting the authorization", err);
  }
  return {
    authorizeUrl: provider.authorizationUrl.href,
    state,
    codeVerifier: provider.verifier,
    clientInformation: provider.clientInfo,
    discovery,
    resource,
  };
}

/** Exchanges an authorization code (with the flow's PKCE verifier) for tokens. */
export async function exchangeCode(ctx: GrantContext & { code: string; codeVerifier: string }, fetchFn: FetchLike = boundedFetch()): Promise<OAuthTokens> {
  const provider = new StepProvider(ctx.redirectUri, { redirect_uris: [ctx.redirectUri] }, ctx.discovery, ctx.resource, "", ctx.clientInformation);
  provider.saveCodeVerifier(ctx.codeVerifier);
  try {
    await auth(provider, { serverUrl: ctx.serverUrl, authorizationCode: ctx.code, fetchFn });
  } catch (err) {
    throw oauthFailure("the authorization code exchange", err);
  }
  if (!provider.savedTokens) throw oauthFailure("the authorization code exchange", new Error("no tokens were returned"));
  return provider.savedTokens;
}

/** Refreshes with a refresh token; errors are the SDK's (isDeadGrant tells a dead grant from a passing fault). */
export async function refreshTokens(ctx: GrantContext & { refreshToken: string }, fetchFn: FetchLike = boundedFetch()): Promise<OAuthTokens> {
  const tokens = await refreshAuthorization(ctx.discovery.authorizationServerUrl, {
    ...(ctx.discovery.authorizationServerMetadata ? { metadata: ctx.discovery.authorizationServerMetadata } : {}),
    clientInformation: ctx.clientInformation,
    refreshToken: ctx.refreshToken,
    resource: new URL(ctx.resource),
    fetchFn,
  });
  return tokens;
}

/**
 * Revokes a token at the authorization server's RFC 7009 endpoint, when it has one; resolves false when
 * there is none. The client authenticates as at the token endpoint (basic with a secret, else client_id).
 */
export async function revokeToken(ctx: GrantContext, token: string, hint: "access_token" | "refresh_token", fetchFn: FetchLike = boundedFetch()): Promise<boolean> {
  const endpoint = ctx.discovery.authorizationServerMetadata ? revocationEndpointOf(ctx.discovery.authorizationServerMetadata) : undefined;
  if (!endpoint) return false;
  const body = new URLSearchParams({ token, token_type_hint: hint });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  const { client_id: id, client_secret: secret } = ctx.clientInformation as { client_id: string; client_secret?: string };
  if (secret) headers["authorization"] = `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
  else body.set("client_id", id);
  const res = await fetchFn(endpoint, { method: "POST", headers, body: body.toString() });
  await res.body?.cancel().catch(() => undefined);
  if (!res.ok) throw new Error(`the revocation endpoint answered HTTP ${res.status}`);
  return true;
}
