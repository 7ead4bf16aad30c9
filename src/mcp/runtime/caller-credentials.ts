/**
 * The caller's own upstream credential of a per-user client (per_user_headers values, a per_user_oauth
 * token source, a token_exchange exchanged token), as both execute() and the /mcp/<client> relay send it.
 * A caller without one gets the mcp_identity_required 401 or McpAuthRequiredError, and the tool does not run.
 */
import { GatewayError } from "../../errors.js";
import type { CallerCredential, ClientRuntime } from "../client-runtime.js";
import { McpAuthRequiredError, describeIdentity, identityRequired, type PerUserClient } from "../credentials/index.js";
import type { BearerSource } from "../oauth/bearer-fetch.js";
import type { RelayCredentialContext } from "../relay/relay-source.js";
import { TokenExchangeError } from "../token-exchange/exchanger.js";
import type { RuntimeState } from "./runtime-state.js";

/** Who a call acts for, as the per-user auth types read it. */
export type CallerContext = Pick<RelayCredentialContext, "identity" | "subjectToken" | "origin">;

/** The per-user credential stores' view of a client. */
export function perUserClient(client: ClientRuntime): PerUserClient {
  return { id: client.id, spec: client.spec };
}

/** Builds callers' credentials from the runtime's in-memory credential stores (never waiting on the database for a usable one). */
export class CallerCredentials {
  constructor(private readonly state: RuntimeState) {}

  /**
   * The caller's own credential for a per-user client (header values, an OAuth token source, an exchanged
   * token); undefined for a client with one credential for everyone. Throws McpAuthRequiredError, or the
   * mcp_identity_required error, when the caller has none yet.
   */
  async of(client: ClientRuntime, caller: CallerContext): Promise<CallerCredential | undefined> {
    switch (client.spec.authType) {
      case "per_user_oauth":
        return this.oauthBearer(perUserClient(client), caller);
      case "token_exchange":
        return { values: await this.exchangedHeaders(client, caller) };
      case "per_user_headers":
        return { values: await this.headerValues(client, caller) };
      default:
        return undefined;
    }
  }

  /** A per_user_oauth caller's token source. */
  async oauthBearer(perUser: PerUserClient, caller: CallerContext): Promise<{ bearer: BearerSource & { readonly lastSent: string | null } }> {
    return { bearer: await this.state.credentials.bearerForCall(perUser, caller.identity, caller.origin) };
  }

  /** A per_user_headers caller's header values. */
  private async headerValues(client: ClientRuntime, caller: CallerContext): Promise<Record<string, string>> {
    const perUser = perUserClient(client);
    if (!caller.identity) throw identityRequired(client.spec.name);
    const values = this.state.credentials.valuesForCall(perUser, caller.identity);
    // Without a usable credential the call fails anyway; opening its flow is the one write it waits on.
    if (values === null) throw await this.state.credentials.authRequired(perUser, caller.identity, caller.origin);
    return values;
  }

  /**
   * The Authorization header a token_exchange call carries: the caller's IdP token exchanged for one of
   * the MCP server. No identity is the inline 401; an identity without an IdP token, or an exchange the
   * identity provider refuses, is mcp_auth_required of kind "exchange" and the tool does not run.
   */
  async exchangedHeaders(client: ClientRuntime, caller: Pick<CallerContext, "identity" | "subjectToken">): Promise<Record<string, string>> {
    const { spec } = client;
    if (!caller.identity) throw identityRequired(spec.name);
    const base = { kind: "exchange" as const, mcp_client_id: client.id, mcp_client_name: spec.name };
    if (!caller.subjectToken) {
      throw new McpAuthRequiredError({
        ...base,
        subject_token_missing: true,
        message: `MCP client "${spec.name}" acts as you at the upstream server and needs your own identity-provider token, which ${describeIdentity(caller.identity)} does not carry: call with Authorization: Bearer <your IdP access token>, or sign in to the gateway through SSO`,
      });
    }
    if (!spec.tokenExchange) throw new GatewayError("internal", `token_exchange client "${spec.name}" has no token_exchange configuration`);
    try {
      const token = await this.state.exchanger.tokenFor(client.id, spec.tokenExchange, caller.identity, caller.subjectToken);
      return { Authorization: `Bearer ${token}` };
    } catch (err) {
      if (!(err instanceof TokenExchangeError)) throw err;
      this.state.deps.logger.info({ client_id: client.id, client: spec.name, identity_kind: caller.identity.kind, error: err.message }, "token exchange refused");
      throw new McpAuthRequiredError({ ...base, subject_token_missing: false, exchange_error: err.message, message: `MCP client "${spec.name}" could not get a token for you: ${err.message}` });
    }
  }
}
