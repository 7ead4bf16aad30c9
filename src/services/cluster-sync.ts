/**
 * Takes another node's configuration change into this node's memory, the way the API write that made it
 * updates the writing node: the row is read back from the store (a row that is gone is removed), so a late
 * or repeated notification only re-reads what is there. What must not wait behind other changes (an
 * ended session, a provider key's backoff) is applied as its notification arrives, from the notification.
 */
import type { ChangeHandlers, ChangeListener, ConfigChange } from "../cluster/change-listener.js";
import type { KeyBackoff } from "../routing/key-backoffs.js";
import type { PricingSync } from "../routing/pricing-sync.js";
import { KeyBackoffTable, keyBackoffRowId, McpClientRecord, ProviderRecord, VirtualKeyRecord } from "../store/index.js";
import type { AdminAuth } from "./admin-auth.js";
import type { SsoLogin } from "./sso/sso-login.js";
import { readSettings } from "./bootstrap.js";
import type { ReloadTarget } from "./config-reload.js";
import { virtualKeyChangedHook } from "./credential-service.js";
import { entityLockKey, entityLocks } from "./entity-write-lock.js";
import { loadGroups, reloadGroup } from "./inference/group-records.js";
import { loadRoutingRules, reloadInference, reloadRoutingRule } from "./inference/records.js";
import { loadGuardrails, reloadGuardrail } from "./guardrails/guardrail-records.js";
import { loadVirtualServers, reloadVirtualServer } from "./virtual-mcp-servers/virtual-server-records.js";

/** What another node's change may reach: the configuration, the pricing datasheet the oldest node stores, SSO and admin sessions. */
export interface ClusterSyncTarget extends ReloadTarget {
  pricing?: Pick<PricingSync, "reloadFromStore">;
  ssoLogin?: Pick<SsoLogin, "sessionChanged" | "sessionEnded" | "load">;
  auth?: Pick<AdminAuth, "sessionEnded" | "forgetSessions">;
}

/** The handlers a ChangeListener calls with the changes of the other nodes. */
export function configChangeHandlers(target: ClusterSyncTarget): ChangeHandlers {
  return {
    change: (change) => applyConfigChange(change, target),
    resync: () => reloadAllConfig(target),
    onReceipt: (change, payload) => applyOnReceipt(change, payload, target),
  };
}

/**
 * Tells the other nodes of a backoff this node learnt, carrying it whole so that they apply it as it
 * arrives; the row KeyBackoffTable stores notifies them too, for when this cannot be sent.
 */
export function announceKeyBackoff(listener: Pick<ChangeListener, "announce">, backoff: KeyBackoff): void {
  listener.announce(
    { entity: "provider_key_backoff", id: keyBackoffRowId(backoff.provider, backoff.keyId), op: "update" },
    { provider: backoff.provider, key_id: backoff.keyId, until_ms: backoff.untilMs },
  );
}

/**
 * Applies at once the changes that are final whenever they arrive: an ended session (a token never comes
 * back) and a backoff announced with its time (a node keeps the latest). False sends the change to the queue.
 */
export function applyOnReceipt(change: ConfigChange, payload: Readonly<Record<string, unknown>>, target: ClusterSyncTarget): boolean {
  switch (change.entity) {
    case "admin_session":
      if (change.op !== "delete" || target.auth === undefined) return false;
      target.auth.sessionEnded(change.id);
      return true;
    case "sso_session":
      if (change.op !== "delete" || target.ssoLogin === undefined) return false;
      target.ssoLogin.sessionEnded(change.id);
      return true;
    case "provider_key_backoff": {
      const { provider, key_id: keyId, until_ms: untilMs } = payload;
      // The row's trigger sends no time: that notification is read back in turn.
      if (typeof provider !== "string" || typeof keyId !== "string" || typeof untilMs !== "number" || !Number.isFinite(untilMs)) return false;
      target.inference.keyBackoffs.apply({ provider, keyId, untilMs });
      return true;
    }
    default:
      return false;
  }
}

/** The entities re-read row by row, which take their turn with this node's own writes of the same row. */
const READ_BY_ROW = new Set(["virtual_key", "provider", "mcp_client", "routing_rule", "guardrail", "virtual_mcp_server", "governance_group"]);

/**
 * Re-reads one changed row into the running gateway. A row re-read on its own waits for this node's write of
 * it, if one is under way, so that a read from before that write is never installed after it.
 */
export async function applyConfigChange(change: ConfigChange, target: ClusterSyncTarget): Promise<void> {
  if (!READ_BY_ROW.has(change.entity)) return applyChange(change, target);
  return entityLocks(target.store).run(entityLockKey({ kind: change.entity, id: change.id }), () => applyChange(change, target));
}

async function applyChange(change: ConfigChange, target: ClusterSyncTarget): Promise<void> {
  const { store, logger, inference, runtime } = target;
  const em = store.fork();
  switch (change.entity) {
    case "virtual_key": {
      const exists = (await em.count(VirtualKeyRecord, { id: change.id })) > 0;
      if (exists) await reloadInference(store, inference, logger, { providers: [], virtualKeys: [change.id] });
      else inference.removeVirtualKey(change.id);
      await virtualKeyChangedHook({ runtime, inference })(change.id, !exists);
      break;
    }
    case "provider": {
      if ((await em.count(ProviderRecord, { name: change.id })) > 0) await reloadInference(store, inference, logger, { providers: [change.id], virtualKeys: [] });
      else inference.removeProvider(change.id);
      break;
    }
    case "routing_rule":
      await reloadRoutingRule(store, inference, logger, change.id);
      break;
    case "guardrail":
      await reloadGuardrail(store, target.guardrails, logger, change.id);
      break;
    case "virtual_mcp_server":
      await reloadVirtualServer(store, target.virtualServers, logger, change.id);
      break;
    case "governance_group":
      await reloadGroup(store, inference, logger, change.id);
      break;
    case "setting":
      await applySettings(target);
      break;
    case "mcp_client": {
      if ((await em.count(McpClientRecord, { id: change.id })) > 0) {
        await runtime.reload([change.id]);
      } else {
        runtime.oauth.forget(change.id);
        await runtime.remove(change.id);
        await runtime.credentials.clientRemoved(change.id);
      }
      break;
    }
    case "mcp_user_credential":
      await runtime.credentials.credentialChanged(change.id);
      break;
    case "pricing_snapshot":
      await target.pricing?.reloadFromStore();
      break;
    case "sso_session":
      await target.ssoLogin?.sessionChanged(change.id);
      break;
    case "admin_session":
      if (change.op === "delete") target.auth?.sessionEnded(change.id);
      break;
    case "provider_key_backoff": {
      const backoff = await new KeyBackoffTable(store).read(change.id);
      if (backoff !== null) inference.keyBackoffs.apply(backoff);
      break;
    }
    default:
      logger.warn({ entity: change.entity }, "ignored a change notification for a table this gateway does not cache");
      return;
  }
  logger.debug({ entity: change.entity, id: change.id, op: change.op }, "applied another node's configuration change");
}

async function applySettings(target: ReloadTarget): Promise<void> {
  const stored = await readSettings(target.store);
  target.settings.setToolManager(stored.toolManager);
  target.settings.setClient(stored.client);
  target.settings.setLoadBalancer(stored.loadBalancer);
}

/** Reloads every cached configuration row: after the listen connection was lost, any of them may have changed. */
export async function reloadAllConfig(target: ClusterSyncTarget): Promise<void> {
  const { store, logger, inference, runtime } = target;
  const em = store.fork();
  await applySettings(target);
  await loadGroups(store, inference, logger);
  const providers = (await em.find(ProviderRecord, {}, { fields: ["name"] })).map((rec) => rec.name);
  const keys = (await em.find(VirtualKeyRecord, {}, { fields: ["id"] })).map((rec) => rec.id);
  for (const name of [...inference.providers.keys()]) if (!providers.includes(name)) inference.removeProvider(name);
  for (const id of inference.virtualKeys.ids()) if (!keys.includes(id)) inference.removeVirtualKey(id);
  await reloadInference(store, inference, logger, { providers, virtualKeys: keys });
  await loadRoutingRules(store, inference, logger);
  await loadGuardrails(store, target.guardrails, logger);
  await loadVirtualServers(store, target.virtualServers, logger);
  const clients = (await em.find(McpClientRecord, {}, { fields: ["id"] })).map((rec) => rec.id);
  for (const id of runtime.clientIds()) {
    if (!clients.includes(id)) await applyConfigChange({ entity: "mcp_client", id, op: "delete" }, target);
  }
  await runtime.reload(clients);
  await runtime.credentials.reloadAll();
  await target.pricing?.reloadFromStore();
  await target.ssoLogin?.load();
  target.auth?.forgetSessions();
  for (const backoff of await new KeyBackoffTable(store).active(Date.now())) inference.keyBackoffs.apply(backoff);
  logger.info({ providers: providers.length, virtual_keys: keys.length, mcp_clients: clients.length }, "reloaded the whole configuration from the store");
}
