/** gw.admin.v1.McpClientService: the MCP client registry, with every configuration rule of docs/mcp-gateway.md. */
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { applyPatch, isOauth, isPerCall, validateSpec, validateUserHeaders, type McpClientSpec } from "../mcp/client-spec.js";
import { reportedState, type RuntimeClientView } from "../mcp/client-state.js";
import { afterSchemaChange, sameHeaderKeys } from "../mcp/credentials/status.js";
import { snapshotOf, type McpRuntime } from "../mcp/runtime.js";
import { assertNameFree, assignSpec, getClient, insertClient, listClients, recordToSpec } from "../mcp/client-repository.js";
import { discoverTools, type DiscoveredTool } from "../mcp/discover.js";
import { perUserWireHeaders } from "../mcp/wire-headers.js";
import { deleteRecord, inNativeTransaction, insertRecord, McpClientRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { McpClientSchema, McpClientService, type McpClient } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { kAdmin, emOf, kRequestScope } from "./context.js";
import { FOR_UPDATE, writeEntity, type EntityRef } from "./entity-write-lock.js";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { FLOW_EXPIRED, expireIfDue, findAttempt, flowRecord, prepareFlow, sweepExpired } from "../mcp/oauth/flows.js";
import { McpOauthCredentialRecord } from "../store/index.js";
import { virtualKeyAccess } from "./credential-service.js";
import type { Inference } from "../inference/state.js";
import { oauthPublicBase, pendingOauthPayload, type PendingOauthPayload } from "./oauth-payload.js";
import { configToSpec, recordToProto, toolMessage } from "./mcp-client-mapping.js";
import { liveNodeViews, withNodeStates } from "./mcp-node-states.js";
import type { NodeRegistry } from "../cluster/node-registry.js";

/** What the MCP client service needs from the rest of the app. */
export interface McpClientServiceDeps {
  store: Store;
  logger: Logger;
  /** The live side of every client. */
  runtime: McpRuntime;
  /** The live nodes, for node_states in reads (absent: a single node). */
  cluster?: NodeRegistry;
  /** Bounds each one-time upstream verify. */
  verifyTimeoutMs?: number;
  /** The virtual keys, to re-check which keys reach a renamed client (their mcp_configs name it). */
  inference?: Inference;
  /** client.mcp_external_client_url, the base of the OAuth callback URL. */
  settings?: RuntimeSettings;
}

/** The write lock of a client, by its id as the store keeps it. */
function clientRef(id: string): EntityRef {
  return { kind: "mcp_client", id: id.toLowerCase() };
}

/** The stored client, or a 404, with its row locked for the write's transaction and read as last committed. */
async function lockedClient(tx: EntityManager, id: string): Promise<McpClientRecord> {
  const found = await getClient(tx, id);
  const rec = await tx.findOne(McpClientRecord, { id: found.id }, FOR_UPDATE);
  if (!rec) throw new GatewayError("not_found", `no MCP client with id "${id}"`);
  return rec;
}

/**
 * A 422 carrying the upstream's own words, for a failed one-time verify. An upstream may echo the sample
 * values in its error, so they are cut out, and the error object (which may hold them) is not kept as cause.
 */
function verifyFailed(err: unknown, values: readonly string[]): GatewayError {
  let detail = err instanceof Error ? err.message : String(err);
  for (const value of values) if (value.length >= 3) detail = detail.split(value).join("<redacted>");
  return new GatewayError("failed_precondition", `upstream verify failed: ${detail}`, {
    type: "upstream_verify_failed",
    httpStatus: 422,
  });
}

/**
 * The state a read reports. A per-user client whose admin discovery credential needs repair shows
 * needs_reauth over healthy or unstable: a projection for reads only, tool calls keep working.
 */
function projectedState(rec: McpClientRecord, runtime: McpRuntime): RuntimeClientView {
  const view = reportedState(rec.id, rec, rec.verified, runtime);
  const repair =
    ((rec.authType === "per_user_headers" || rec.authType === "token_exchange") && rec.discoveryHeaders !== null && rec.discoveryStatus === "needs_update") ||
    (rec.authType === "per_user_oauth" && rec.verified && rec.discoveryStatus === "needs_update");
  return repair && (view.state === "healthy" || view.state === "unstable") ? { ...view, state: "needs_reauth" } : view;
}

/** Creates the service implementation. */
export function createMcpClientService(deps: McpClientServiceDeps): ServiceImpl<typeof McpClientService> {
  const { store, runtime } = deps;
  const verifyTimeoutMs = deps.verifyTimeoutMs ?? 30_000;

  /** The read shapes of clients, with every live node's view when more than one node is live. */
  async function readShapes(records: readonly McpClientRecord[]): Promise<McpClient[]> {
    const views = deps.cluster ? await liveNodeViews(store, deps.cluster, records.map((rec) => rec.id)) : new Map();
    return records.map((rec) => {
      const own = projectedState(rec, runtime);
      return withNodeStates(recordToProto(rec, own, runtime.quarantined(rec.id)), own, store.nodeId, views.get(rec.id), runtime.toolsCount(rec.id));
    });
  }

  async function verifyUpstream(spec: McpClientSpec, userHeaders: Record<string, string>): Promise<DiscoveredTool[]> {
    if (spec.connectionType === "stdio" || spec.connectionString === null) {
      throw invalidField("connection_type", "per-user verification needs an http or sse client");
    }
    const headers = perUserWireHeaders(spec.headers, spec.perUserHeaderKeys, userHeaders);
    try {
      return await discoverTools({ connectionType: spec.connectionType, connectionString: spec.connectionString }, headers, {
        timeoutMs: verifyTimeoutMs,
      });
    } catch (err) {
      throw verifyFailed(err, Object.values(userHeaders));
    }
  }

  /**
   * The spec an update leads to: the mask applied to the client as read (stored stickiness, not the
   * effective one, so an untouched client keeps its default), then the domain rules (redacted header
   * values keep their stored values, every rule re-checked).
   */
  function updatedSpec(rec: McpClientRecord, paths: readonly string[], client: McpClient): McpClientSpec {
    if (paths.some((path) => path.split(".")[0] === "user_headers")) {
      throw invalidField("user_headers", "is accepted only at creation; use POST /api/mcp/client/{id}/verify-headers");
    }
    const current = recordToSpec(rec);
    const base = recordToProto(rec, projectedState(rec, runtime));
    base.needsSessionStickiness = current.needsSessionStickiness ?? undefined;
    const merged = configToSpec(applyFieldMask(McpClientSchema, base, client, paths, "an MCP client"));
    return applyPatch(current, {
      name: merged.name,
      headers: merged.headers,
      perUserHeaderKeys: merged.perUserHeaderKeys,
      toolsToExecute: merged.toolsToExecute,
      toolsToAutoExecute: merged.toolsToAutoExecute,
      toolSyncInterval: merged.toolSyncInterval,
      needsSessionStickiness: merged.needsSessionStickiness,
      disabled: merged.disabled,
      allowOnAllVirtualKeys: merged.allowOnAllVirtualKeys,
      oauthConfig: merged.oauthConfig,
      isCodeModeClient: merged.isCodeModeClient,
      tokenExchange: merged.tokenExchange ?? null,
      toolPinning: merged.toolPinning ?? false,
    });
  }

  /** Starts another authorization attempt for an oauth client and answers the pending_oauth payload. */
  async function newAttempt(em: EntityManager, rec: McpClientRecord, origin: string | null, message: string): Promise<PendingOauthPayload> {
    const started = await prepareFlow(recordToSpec(rec), oauthPublicBase(origin, deps.settings));
    await sweepExpired(em, runtime.now());
    const flow = flowRecord(em, rec.id, started, runtime.now());
    await insertRecord(em, flow);
    deps.logger.info({ client_id: rec.id, client: rec.name, oauth_config_id: flow.id }, "upstream OAuth authorization started");
    return pendingOauthPayload(rec, flow, started.authorizeUrl, message);
  }

  function perCallError(name: string, action: string): GatewayError {
    return new GatewayError(
      "invalid_argument",
      `client "${name}" uses per-call connections and has no persistent connection to ${action}`,
      { type: "per_call_client" },
    );
  }

  return {
    async createMcpClient(req, ctx) {
      if (!req.client) throw invalidField("client", "is required");
      const spec = configToSpec(req.client);
      validateSpec(spec);
      if (spec.connectionType === "stdio" && ctx.values.get(kAdmin) === null) {
        throw new GatewayError(
          "permission_denied",
          "creating a stdio client spawns a process and needs an admin session: enable auth_config, sign in with POST /api/session/login and send Authorization: Bearer <token> (or declare the client in the config file)",
          { type: "admin_session_required" },
        );
      }
      const em = emOf(ctx, store);
      await assertNameFree(em, spec.name);
      const userHeaders = req.client.userHeaders;
      let tools: DiscoveredTool[] = [];
      let verified = false;
      if (spec.authType === "per_user_headers") {
        validateUserHeaders(spec.perUserHeaderKeys, userHeaders);
        tools = await verifyUpstream(spec, userHeaders);
        verified = true;
      } else if (Object.keys(userHeaders).length > 0) {
        throw invalidField("user_headers", `are only for per_user_headers clients, not ${spec.authType}`);
      }
      if (isOauth(spec.authType)) {
        // Discovery and registration first: an authorization server that is down or answers garbage stores nothing.
        const started = await prepareFlow(spec, oauthPublicBase(ctx.values.get(kRequestScope).origin, deps.settings));
        const { rec, flow } = await inNativeTransaction(store, async (tx) => {
          const created = await insertClient(tx, spec, { source: "api", verified: false, tools: [] });
          const attempt = flowRecord(tx, created.id, started, runtime.now());
          await insertRecord(tx, attempt);
          return { rec: created, flow: attempt };
        });
        deps.logger.info({ client_id: rec.id, client: spec.name, connection_type: spec.connectionType, auth_type: spec.authType, oauth_config_id: flow.id }, "MCP client created; waiting for OAuth consent");
        await runtime.add(snapshotOf(rec));
        return pendingOauthPayload(rec, flow, started.authorizeUrl, `MCP client "${spec.name}" created; open authorize_url to grant access, then POST complete_url`);
      }
      const rec = await insertClient(em, spec, { source: "api", verified, tools });
      deps.logger.info({ client_id: rec.id, client: spec.name, connection_type: spec.connectionType, auth_type: spec.authType }, "MCP client created");
      // The first connect (sticky) or discovery (per-call) runs before we answer, so the reply can say how it went.
      const live = await runtime.add(snapshotOf(rec));
      const view = reportedState(rec.id, spec, verified, runtime);
      const message = verified
        ? `MCP client "${spec.name}" created and verified upstream: ${tools.length} tools discovered`
        : view.state === "healthy"
          ? `MCP client "${spec.name}" created: ${live.tools.length} tools discovered`
          : view.state === "unstable" || view.state === "needs_reauth"
            ? `MCP client "${spec.name}" created; its first connection failed (${view.lastFailure?.message ?? view.state}), the client is ${view.state}`
            : `MCP client "${spec.name}" created`;
      return { status: "success", message, clientId: rec.id };
    },

    async updateMcpClient(req) {
      const { rec, next } = await writeEntity(store, clientRef(req.clientId), async (em) => {
        const rec = await lockedClient(em, req.clientId);
        const current = recordToSpec(rec);
        if (!req.client) throw invalidField("client", "is required");
        const next = updatedSpec(rec, req.updateMask?.paths ?? [], req.client);
        if (next.name !== current.name) await assertNameFree(em, next.name, rec.id);
        assignSpec(rec, next);
        // A schema change (a per-user key added, removed or renamed) also sends the admin discovery credential to needs_update.
        const schemaChanged = next.authType === "per_user_headers" && !sameHeaderKeys(current.perUserHeaderKeys, next.perUserHeaderKeys);
        if (schemaChanged && rec.discoveryHeaders !== null && rec.discoveryStatus !== null) {
          const state = afterSchemaChange({ status: rec.discoveryStatus, values: rec.discoveryHeaders }, next.perUserHeaderKeys);
          rec.discoveryHeaders = state.values;
          rec.discoveryStatus = state.status === "active" ? "active" : "needs_update";
        }
        await writeRecord(em, rec);
        return { rec, current, next, schemaChanged };
      }, async ({ rec, current, next, schemaChanged }) => {
        await runtime.update(snapshotOf(rec));
        if (schemaChanged) await runtime.credentials.schemaChanged(rec.id, next.perUserHeaderKeys);
        // Virtual keys grant clients by name, so a rename can take access away from (or give it back to) their credentials.
        if (next.name !== current.name && deps.inference) await runtime.credentials.reconcileAccess(virtualKeyAccess(deps.inference), { clientId: rec.id });
      });
      deps.logger.info({ client_id: rec.id, client: next.name, fields: req.updateMask?.paths }, "MCP client updated");
      return {
        status: "success",
        message: `MCP client "${next.name}" updated`,
        client: recordToProto(rec, projectedState(rec, runtime), runtime.quarantined(rec.id)),
      };
    },

    async deleteMcpClient(req) {
      const rec = await writeEntity(store, clientRef(req.clientId), async (em) => {
        const found = await lockedClient(em, req.clientId);
        await deleteRecord(em, found);
        await em.nativeDelete(McpOauthCredentialRecord, { clientId: found.id });
        return found;
      }, async (found) => {
        runtime.oauth.forget(found.id);
        await runtime.remove(found.id);
        await runtime.credentials.clientRemoved(found.id);
      });
      deps.logger.info({ client_id: rec.id, client: rec.name }, "MCP client deleted");
      return { status: "success", message: `MCP client "${rec.name}" deleted` };
    },

    async getMcpClient(req, ctx) {
      const rec = await getClient(emOf(ctx, store), req.clientId);
      return { client: (await readShapes([rec]))[0] ?? recordToProto(rec, projectedState(rec, runtime), runtime.quarantined(rec.id)) };
    },

    async listMcpClients(req, ctx) {
      if (req.limit < 0) throw invalidField("limit", "must not be negative");
      if (req.offset < 0) throw invalidField("offset", "must not be negative");
      const { items, total } = await listClients(emOf(ctx, store), { limit: req.limit, offset: req.offset, search: req.search });
      const clients = await readShapes(items);
      return { clients, count: clients.length, totalCount: total };
    },

    async reconnectMcpClient(req, ctx) {
      const rec = await getClient(emOf(ctx, store), req.clientId);
      if (isPerCall(rec)) throw perCallError(rec.name, "reconnect");
      if (rec.disabled) throw new GatewayError("failed_precondition", `client "${rec.name}" is disabled; enable it to connect`, { type: "mcp_client_disabled" });
      try {
        await runtime.reconnect(rec.id);
      } catch (err) {
        throw new GatewayError("unavailable", `reconnect of "${rec.name}" failed: ${err instanceof Error ? err.message : String(err)}`, { type: "upstream_error", cause: err });
      }
      return { status: "success", message: `client "${rec.name}" reconnected` };
    },

    async closeMcpClient(req, ctx) {
      const rec = await getClient(emOf(ctx, store), req.clientId);
      if (isPerCall(rec)) throw perCallError(rec.name, "close");
      await runtime.close(rec.id);
      return { status: "success", message: `connection of client "${rec.name}" closed; POST /api/mcp/client/${rec.id}/reconnect re-dials it` };
    },

    async verifyHeaders(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getClient(em, req.clientId);
      if (rec.authType !== "per_user_headers") {
        throw new GatewayError("invalid_argument", `verify-headers applies only to per_user_headers clients; "${rec.name}" uses ${rec.authType}`, { type: "not_applicable" });
      }
      if (rec.verified && rec.discoveryStatus !== "needs_update") {
        throw new GatewayError("already_exists", `client "${rec.name}" is already verified and its admin discovery credential is ${rec.discoveryStatus ?? "absent"}; verify-headers is accepted again only while it needs an update`, {
          type: "already_verified",
          httpStatus: 409,
        });
      }
      validateUserHeaders(rec.perUserHeaderKeys, req.userHeaders);
      const spec = recordToSpec(rec);
      const tools = await verifyUpstream(spec, req.userHeaders);
      // The upstream call is made outside the lock; the write then applies to the client as last committed.
      await writeEntity(store, clientRef(rec.id), async (tx) => {
        const locked = await lockedClient(tx, rec.id);
        locked.tools = tools;
        locked.verified = true;
        locked.discoveryHeaders = { ...req.userHeaders };
        locked.discoveryStatus = "active";
        locked.updatedAt = new Date();
        await writeRecord(tx, locked);
        return locked;
      }, (locked) => runtime.update(snapshotOf(locked)));
      deps.logger.info({ client_id: rec.id, client: rec.name, state: "healthy", tools_count: tools.length }, "MCP client verified");
      return { status: "success", message: `client "${rec.name}" verified: ${tools.length} tools discovered`, toolsCount: tools.length };
    },

    async reauthorize(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getClient(em, req.clientId);
      if (!isOauth(rec.authType)) throw notApplicable("reauthorize", rec, ["oauth", "per_user_oauth"]);
      return newAttempt(em, rec, ctx.values.get(kRequestScope).origin, `open authorize_url to reauthorize "${rec.name}", then POST complete_url; the current connection serves until then`);
    },

    async verifyExchange(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getClient(em, req.clientId);
      if (rec.authType !== "token_exchange") throw notApplicable("verify-exchange", rec, ["token_exchange"]);
      const spec = recordToSpec(rec);
      const subjectToken = ctx.values.get(kAdmin)?.idpToken;
      if (!subjectToken) {
        throw new GatewayError(
          "failed_precondition",
          "verify-exchange exchanges your own identity-provider token: call it as an admin signed in through SSO, with Authorization: Bearer <your IdP access token>",
          { type: "sso_admin_required" },
        );
      }
      if (!spec.tokenExchange || spec.connectionType === "stdio" || spec.connectionString === null) {
        throw new GatewayError("internal", `token_exchange client "${rec.name}" has no token_exchange configuration or URL`);
      }
      let token: string;
      try {
        ({ token } = await runtime.exchanger.exchange(spec.tokenExchange, subjectToken));
      } catch (err) {
        if (err instanceof GatewayError) throw new GatewayError("failed_precondition", `token exchange failed: ${err.message}`, { type: "token_exchange_failed", httpStatus: 422 });
        throw err;
      }
      const discovery = { Authorization: `Bearer ${token}` };
      let tools: DiscoveredTool[];
      try {
        tools = await discoverTools({ connectionType: spec.connectionType, connectionString: spec.connectionString }, discovery, { timeoutMs: verifyTimeoutMs });
      } catch (err) {
        throw verifyFailed(err, [token, subjectToken]);
      }
      const repaired = rec.verified;
      await writeEntity(store, clientRef(rec.id), async (tx) => {
        const locked = await lockedClient(tx, rec.id);
        locked.tools = tools;
        locked.verified = true;
        locked.discoveryHeaders = discovery;
        locked.discoveryStatus = "active";
        locked.updatedAt = new Date();
        await writeRecord(tx, locked);
        return locked;
      }, (locked) => runtime.update(snapshotOf(locked)));
      deps.logger.info({ client_id: rec.id, client: rec.name, state: "healthy", tools_count: tools.length, repaired }, "token_exchange client verified");
      return {
        status: "success",
        message: `client "${rec.name}" ${repaired ? "re-verified" : "verified"} with your exchanged token: ${tools.length} tools discovered`,
        toolsCount: tools.length,
      };
    },

    async initiateVerification(req, ctx) {
      const em = emOf(ctx, store);
      const rec = await getClient(em, req.clientId);
      if (!isOauth(rec.authType)) throw notApplicable("initiate-verification", rec, ["oauth", "per_user_oauth"]);
      if (rec.verified) {
        throw new GatewayError("already_exists", `client "${rec.name}" is already verified; use POST /api/mcp/client/${rec.id}/reauthorize to renew its credential`, {
          type: "already_verified",
          httpStatus: 409,
        });
      }
      return newAttempt(em, rec, ctx.values.get(kRequestScope).origin, `open authorize_url to grant "${rec.name}" access, then POST complete_url`);
    },

    async approveMcpTool(req, ctx) {
      if (req.tool === "") throw invalidField("tool", "is required: the tool's name without the client prefix");
      const rec = await getClient(emOf(ctx, store), req.clientId);
      const stillQuarantined = await runtime.approveTool(rec.id, req.tool);
      const tool = runtime.toolOf(rec.id, req.tool);
      return {
        status: "success",
        message:
          stillQuarantined === null
            ? `tool "${req.tool}" of MCP client "${rec.name}" approved: its current definition is pinned and callers see it again`
            : `tool "${req.tool}" of MCP client "${rec.name}" approved: its current definition is pinned, but it stays quarantined (${stillQuarantined})`,
        ...(tool ? { tool: toolMessage(tool, runtime.quarantined(rec.id)) } : {}),
      };
    },

    async completeOauth(req, ctx) {
      const em = emOf(ctx, store);
      const attempt = await findAttempt(em, req.oauthConfigId);
      if (expireIfDue(attempt, runtime.now())) await writeRecord(em, attempt);
      if (attempt.status === "failed" && attempt.error === FLOW_EXPIRED) {
        throw new GatewayError("failed_precondition", `${FLOW_EXPIRED} (15 minutes); start a new one with initiate-verification or reauthorize`, { type: "oauth_flow_expired", httpStatus: 410 });
      }
      if (attempt.status === "pending") {
        throw new GatewayError("failed_precondition", "no token was obtained yet: open the authorize_url and give consent first, then complete again", { type: "oauth_not_authorized", httpStatus: 409 });
      }
      if (attempt.status !== "authorized") {
        throw new GatewayError("failed_precondition", `the authorization attempt is ${attempt.status}${attempt.error ? ` (${attempt.error})` : ""}; start a new one with initiate-verification or reauthorize`, {
          type: "oauth_not_authorized",
          httpStatus: 409,
        });
      }
      const rec = await getClient(em, attempt.clientId);
      const access = attempt.secrets.tokens?.["access_token"];
      let tools: DiscoveredTool[];
      try {
        if (rec.connectionType === "stdio" || !rec.connectionString || typeof access !== "string") throw new Error("the attempt holds no usable token");
        tools = await discoverTools({ connectionType: rec.connectionType, connectionString: rec.connectionString }, { Authorization: `Bearer ${access}` }, { timeoutMs: verifyTimeoutMs });
      } catch (err) {
        throw verifyFailed(err, typeof access === "string" ? [access] : []);
      }
      const wasVerified = rec.verified;
      const connectionString = rec.connectionString;
      await writeEntity(store, clientRef(rec.id), async (tx) => {
        const locked = await lockedClient(tx, rec.id);
        // The newest authorized attempt is the client's credential; the ones it replaces are over.
        await tx.nativeUpdate(McpOauthCredentialRecord, { clientId: locked.id, status: "authorized", id: { $ne: attempt.id } }, { status: "revoked", secrets: {}, updatedAt: new Date() });
        locked.verified = true;
        locked.tools = tools;
        // per_user_oauth: the admin's token is the admin discovery credential, used for the tool sync only.
        if (locked.authType === "per_user_oauth") locked.discoveryStatus = "active";
        locked.updatedAt = new Date();
        await writeRecord(tx, locked);
        return locked;
      }, async (locked) => {
        runtime.oauth.adopt(attempt, connectionString);
        await runtime.update(snapshotOf(locked));
        if (wasVerified) await runtime.credentialRenewed(locked.id);
      });
      const view = projectedState(rec, runtime);
      deps.logger.info({ client_id: rec.id, client: rec.name, oauth_config_id: attempt.id, state: view.state, tools_count: tools.length }, "MCP client OAuth completed");
      return {
        status: "success",
        message: `client "${rec.name}" authorized and connected: ${tools.length} tools discovered`,
        clientId: rec.id,
        toolsCount: tools.length,
      };
    },
  };
}

/** Recovery operations apply to particular auth types; other clients get the "does not apply" answer. */
function notApplicable(action: string, rec: { name: string; authType: string }, types: string[]): GatewayError {
  return new GatewayError("invalid_argument", `${action} applies only to ${types.join(" and ")} clients; "${rec.name}" uses ${rec.authType}`, { type: "not_applicable" });
}
