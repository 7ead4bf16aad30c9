/** gw.admin.v1.OauthService: the status and revoke of upstream OAuth authorization attempts, and the callback. */
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { getClient } from "../mcp/client-repository.js";
import { revokeToken } from "../mcp/oauth/authorization.js";
import { expireIfDue, findAttempt, handleCallback } from "../mcp/oauth/flows.js";
import { grantOf } from "../mcp/oauth/oauth-tokens.js";
import type { McpRuntime } from "../mcp/runtime.js";
import { upstreamMessage } from "../mcp/upstream-errors.js";
import { McpClientRecord, writeRecord, type McpOauthCredentialRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { OauthService } from "../../gen/gw/admin/v1/oauth_pb.js";
import { emOf } from "./context.js";
import { flowFinisher, type FlowFinisherDeps } from "./flow-finisher.js";

/** What the service needs; the callback of a user's per-user flow reads who the browser is signed in as. */
export interface OauthServiceDeps extends FlowFinisherDeps {
  store: Store;
  logger: Logger;
  runtime: McpRuntime;
}

/** An attempt, with a pending one past its expiry moved to failed first. */
async function currentAttempt(em: EntityManager, id: string, now: number): Promise<McpOauthCredentialRecord> {
  const rec = await findAttempt(em, id);
  if (expireIfDue(rec, now)) await writeRecord(em, rec);
  return rec;
}

/** Creates the service implementation. */
export function createOauthService(deps: OauthServiceDeps): ServiceImpl<typeof OauthService> {
  const { store, runtime } = deps;

  /** Revokes the attempt's tokens at the authorization server; a failure there is logged, the local revoke goes on. */
  async function revokeUpstream(rec: McpOauthCredentialRecord, serverUrl: string): Promise<string> {
    const tokens = rec.secrets.tokens ?? {};
    const grant = grantOf(rec, serverUrl);
    try {
      let revoked = false;
      for (const hint of ["refresh_token", "access_token"] as const) {
        const token = tokens[hint];
        if (typeof token === "string") revoked = (await revokeToken(grant, token, hint)) || revoked;
      }
      return revoked ? " and at the authorization server" : " (the authorization server has no revocation endpoint)";
    } catch (err) {
      const message = upstreamMessage(err);
      deps.logger.warn({ client_id: rec.clientId, oauth_config_id: rec.id, err: message }, "upstream OAuth token revocation failed");
      return ` (the authorization server's revocation failed: ${message})`;
    }
  }

  return {
    async getOauthConfigStatus(req, ctx) {
      const rec = await currentAttempt(emOf(ctx, store), req.id, runtime.now());
      return {
        id: rec.id,
        status: rec.status,
        createdAt: timestampFromDate(rec.createdAt),
        expiresAt: timestampFromDate(rec.expiresAt),
        ...(rec.tokenExpiresAt ? { tokenExpiresAt: timestampFromDate(rec.tokenExpiresAt) } : {}),
        tokenScopes: rec.tokenScopes,
        clientId: rec.clientId,
        error: rec.error ?? "",
      };
    },

    async getOauthFlow(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await currentAttempt(em, req.id, runtime.now());
      const client = await em.findOne(McpClientRecord, { id: rec.clientId });
      return {
        id: rec.id,
        status: rec.status,
        clientId: rec.clientId,
        clientName: client?.name ?? "",
        error: rec.error ?? "",
        expiresAt: timestampFromDate(rec.expiresAt),
        completeUrl: `/api/mcp/client/${rec.id}/complete-oauth`,
        verified: client?.verified === true && runtime.oauth.credentialOf(rec.clientId) === rec.id,
      };
    },

    async revokeOauthConfig(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await currentAttempt(em, req.id, runtime.now());
      const client = await getClient(em, rec.clientId);
      const where = rec.status === "authorized" ? await revokeUpstream(rec, client.connectionString ?? "") : "";
      const was = rec.status;
      rec.status = "revoked";
      rec.stateHash = null;
      rec.secrets = {};
      rec.updatedAt = new Date();
      await writeRecord(em, rec);
      if (runtime.oauth.credentialOf(rec.clientId) === rec.id) {
        runtime.oauth.forget(rec.clientId, rec.id);
        runtime.credentialRevoked(rec.clientId, `the OAuth credential was revoked by an admin`);
      }
      deps.logger.info({ client_id: rec.clientId, client: client.name, oauth_config_id: rec.id, was }, "upstream OAuth authorization revoked");
      return { status: "success", message: `OAuth authorization ${rec.id} of client "${client.name}" revoked${where}` };
    },

    async oauthCallback(req, ctx) {
      const query = { code: req.code, state: req.state, error: req.error, errorDescription: req.errorDescription };
      // A per_user_oauth caller's consent first, then the admin authorizations.
      const own = await runtime.credentials.oauthCallback(query, () => flowFinisher(ctx.requestHeader, deps));
      if (own) return { oauthConfigId: own.flowId, status: own.status, message: own.message, clientId: own.clientId, clientName: own.clientName };
      const outcome = await handleCallback(emOf(ctx, store), { code: req.code, state: req.state, error: req.error, errorDescription: req.errorDescription }, runtime.now(), deps.logger);
      return { oauthConfigId: outcome.flowId, status: outcome.status, message: outcome.message, clientId: outcome.clientId, clientName: outcome.clientName };
    },
  };
}
