/**
 * Takes another node's configuration change into this node's memory, the way the API write that made it
 * updates the writing node: the row is read back from the store (a row that is gone is removed), so a late
 * or repeated notification only re-reads what is there.
 */
import type { ChangeHandlers, ConfigChange } from "../cluster/change-listener.js";
import type { PricingSync } from "../routing/pricing-sync.js";
import { KeyBackoffTable, McpClientRecord, ProviderRecord, VirtualKeyRecord } from "../store/index.js";
import type { SsoLogin } from "./sso/sso-login.js";
import { readSettings } from "./bootstrap.js";
import type { ReloadTarget } from "./config-reload.js";
import { virtualKeyChangedHook } from "./credential-service.js";
import { loadGroups } from "./inference/group-records.js";
import { loadRoutingRules, reloadInference } from "./inference/records.js";

const GROUP_LEVELS = ["business_unit", "customer", "team"] as const;

/** What another node's change may reach: the configuration, the pricing datasheet the oldest node stores, and SSO sessions. */
export interface ClusterSyncTarget extends ReloadTarget {
  pricing?: Pick<PricingSync, "reloadFromStore">;
  ssoLogin?: Pick<SsoLogin, "sessionChanged" | "load">;
}

/** The handlers a ChangeListener calls with the changes of the other nodes. */
export function configChangeHandlers(target: ClusterSyncTarget): ChangeHandlers {
  return {
    change: (change) => applyConfigChange(change, target),
    resync: () => reloadAllConfig(target),
  };
}

/** Re-reads one changed row into the running gateway. */
export async function applyConfigChange(change: ConfigChange, target: ClusterSyncTarget): Promise<void> {
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
      await loadRoutingRules(store, inference, logger);
      break;
    case "governance_group":
      if (change.op === "delete") for (const level of GROUP_LEVELS) inference.hierarchy.remove(level, change.id);
      await loadGroups(store, inference, logger);
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
  const clients = (await em.find(McpClientRecord, {}, { fields: ["id"] })).map((rec) => rec.id);
  for (const id of runtime.clientIds()) {
    if (!clients.includes(id)) await applyConfigChange({ entity: "mcp_client", id, op: "delete" }, target);
  }
  await runtime.reload(clients);
  await runtime.credentials.reloadAll();
  await target.pricing?.reloadFromStore();
  await target.ssoLogin?.load();
  for (const backoff of await new KeyBackoffTable(store).active(Date.now())) inference.keyBackoffs.apply(backoff);
  logger.info({ providers: providers.length, virtual_keys: keys.length, mcp_clients: clients.length }, "reloaded the whole configuration from the store");
}
