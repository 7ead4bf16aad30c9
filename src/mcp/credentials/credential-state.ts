/**
 * What the lookup, flows and admin parts of the per-user credentials share: the credential repository (the
 * in-memory cache the call path reads), the flow registry, the dependencies, and the helpers more than one
 * part needs (where a flow's link points, the authorization an oauth flow waits for).
 */
import { randomBytes } from "node:crypto";
import { startAuthorization as authorizationUrlOf } from "@modelcontextprotocol/sdk/client/auth.js";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { GatewayError } from "../../errors.js";
import type { Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { McpClientSpec } from "../client-spec.js";
import type { GrantContext } from "../oauth/authorization.js";
import { AUTH_PAGE_PATH, FlowRegistry, type Flow, type PendingAuthorization } from "./flows.js";
import type { CallerIdentity } from "./identity.js";
import { CredentialRepository } from "./repository.js";

/** A client as the credential code needs it. */
export interface PerUserClient {
  id: string;
  spec: McpClientSpec;
}

/** What the credential code needs. */
export interface PerUserCredentialsDeps {
  store: Store;
  logger: Logger;
  settings: RuntimeSettings;
  /** Milliseconds since the epoch (tests move it to expire flows). */
  now: () => number;
  /** The live configuration of a client, or undefined when it does not exist. */
  clientOf: (clientId: string) => PerUserClient | undefined;
  /** Bounds each one-time upstream verify of submitted values. */
  verifyTimeoutMs?: number;
  /** per_user_oauth: the grant context of the client's admin authorization (discovery, registered client, redirect URI). */
  oauthGrant?: (clientId: string) => GrantContext | undefined;
}

/** The repository, flow registry and dependencies one PerUserCredentials shares among its parts. */
export class CredentialState {
  readonly repo: CredentialRepository;
  readonly flows: FlowRegistry;
  // One warning per instance, whichever part builds the first link without a base.
  private warnedNoBase = false;

  constructor(readonly deps: PerUserCredentialsDeps) {
    this.repo = new CredentialRepository(deps.store, deps.now);
    this.flows = new FlowRegistry(deps.store, deps.now);
  }

  /** The grant context of a per_user_oauth client's admin authorization, read at each use (a reauthorization replaces it). */
  grantOf(clientId: string): GrantContext | undefined {
    return this.deps.oauthGrant?.(clientId);
  }

  /** Whether a flow opened for `identity` carries a temp token: a user's flow is bound to a sign-in instead. */
  withTempToken(identity: CallerIdentity): boolean {
    return this.deps.settings.client.mcpEnableTempTokenAuth && identity.kind !== "user";
  }

  /** Where submission URLs point: mcp_external_client_url, else the origin the request came in by. */
  base(origin: string | null): string {
    const external = this.deps.settings.client.mcpExternalClientUrl.trim();
    if (external !== "") return external;
    if (origin !== null) return origin;
    if (!this.warnedNoBase) {
      this.warnedNoBase = true;
      this.deps.logger.warn(`no public URL can be built for ${AUTH_PAGE_PATH}: set client.mcp_external_client_url`);
    }
    return "";
  }

  /**
   * The authorization an oauth flow waits for: the current one while its state is unspent, else a new one
   * (PKCE S256, a fresh single-use state) on the registration of the admin's authorization. No network.
   */
  async authorization(client: PerUserClient, flow: Flow): Promise<PendingAuthorization> {
    if (flow.authorization?.stateHash) return flow.authorization;
    const grant = this.grantOf(client.id);
    const metadata = grant?.discovery.authorizationServerMetadata;
    if (!grant || !metadata) {
      throw new GatewayError("failed_precondition", `MCP client "${client.spec.name}" has no authorization server on file; an admin must authorize it first (POST /api/mcp/client/${client.id}/reauthorize)`, {
        type: "mcp_client_unavailable",
        httpStatus: 409,
      });
    }
    const configured = client.spec.oauthConfig?.scopes ?? [];
    const scopes = configured.length > 0 ? configured : (grant.discovery.resourceMetadata?.scopes_supported ?? []);
    const state = randomBytes(16).toString("base64url");
    const started = await authorizationUrlOf(grant.discovery.authorizationServerUrl, {
      metadata,
      clientInformation: grant.clientInformation,
      redirectUrl: grant.redirectUri,
      ...(scopes.length > 0 ? { scope: scopes.join(" ") } : {}),
      state,
      resource: grant.resource,
    });
    return this.flows.authorize(flow, state, started.codeVerifier, started.authorizationUrl.href);
  }
}
