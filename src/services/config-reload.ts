/**
 * A config reload (SIGHUP): the re-read file seeds the store through the same path as a boot (seedStore),
 * then the running gateway takes up what that wrote, the way a restart would load it from the store.
 */
import type { RuntimeSettings } from "../config/runtime-settings.js";
import type { McpRuntime } from "../mcp/runtime.js";
import type { Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { readSettings, seedStore, type SeedChanges, type SeedInput } from "./bootstrap.js";
import { virtualKeyChangedHook } from "./credential-service.js";
import { loadGuardrails } from "./guardrails/guardrail-records.js";
import type { GuardrailSet } from "../guardrails/guardrail-set.js";
import type { VirtualServers } from "../mcp/relay/virtual-servers.js";
import { loadVirtualServers } from "./virtual-mcp-servers/virtual-server-records.js";
import { loadGroups } from "./inference/group-records.js";
import { loadRoutingRules, reloadInference } from "./inference/records.js";
import type { InferenceState } from "../inference/state.js";

/** The running parts a reload updates. */
export interface ReloadTarget {
  store: Store;
  logger: Logger;
  settings: RuntimeSettings;
  inference: InferenceState;
  runtime: McpRuntime;
  /** The guardrails the request path reads. */
  guardrails: GuardrailSet;
  /** The virtual MCP servers /mcp/<name> serves. */
  virtualServers: VirtualServers;
}

/** Seeds the store from the re-read file and applies what changed to the running gateway; a bad entry throws before anything changes. */
export async function reloadSeededConfig(input: SeedInput, target: ReloadTarget): Promise<SeedChanges> {
  const { store, logger, settings, inference, runtime } = target;
  const changes = await store.exclusive("seed", () => seedStore(store, input, logger));
  if (changes.toolManager || changes.client) {
    const stored = await readSettings(store);
    if (changes.toolManager) settings.setToolManager(stored.toolManager);
    if (changes.client) settings.setClient(stored.client);
  }
  if (changes.groupIds.length > 0) await loadGroups(store, inference, logger);
  await reloadInference(store, inference, logger, { providers: changes.providers, virtualKeys: changes.virtualKeyIds });
  if (changes.routingRuleIds.length > 0) await loadRoutingRules(store, inference, logger);
  if (changes.guardrailIds.length > 0) await loadGuardrails(store, target.guardrails, logger);
  if (changes.virtualMcpServerNames.length > 0) await loadVirtualServers(store, target.virtualServers, logger);
  // Clients before keys: a key's credentials are checked against the clients it names.
  await runtime.reload(changes.mcpClients.map((client) => client.id));
  const keyChanged = virtualKeyChangedHook({ runtime, inference });
  for (const id of changes.virtualKeyIds) await keyChanged(id, false);
  return changes;
}
