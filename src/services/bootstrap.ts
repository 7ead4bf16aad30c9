/**
 * Seeds the store from the config file at boot. The store is the source of truth:
 * a file section is applied only when it changed since the boot that last applied it (a hash is kept per
 * section), so edits made through the API survive restarts until the file itself changes. When a
 * client's file entry changes, its mutable fields are applied, immutable-field edits are ignored with a
 * warning, and per_user_header_keys is never emptied by the file.
 */
import { createHash } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  DEFAULT_CLIENT,
  DEFAULT_TOOL_MANAGER,
  RuntimeSettings,
  type ClientSettings,
  type ToolManagerSettings,
} from "../config/runtime-settings.js";
import { changedImmutableFields, validateSpec, type McpClientSpec } from "../mcp/client-spec.js";
import { assignSpec, findClientByName, insertClient, recordToSpec } from "../mcp/client-repository.js";
import { invalidField } from "../errors.js";
import { ProviderRecord, SettingRecord, VirtualKeyRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { parseProviderWire } from "./inference/provider-wire.js";
import { assignProvider, assignVirtualKey, clashingKeyField } from "./inference/records.js";
import { parseVirtualKeyWire } from "./inference/virtual-key-wire.js";
import type { Wire } from "./inference/wire-fields.js";
import { SETTING_CLIENT, SETTING_TOOL_MANAGER, saveSetting } from "./settings-service.js";

function hashOf(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex");
}

/** True when the file's value for `key` differs from the one last applied. */
async function fileChanged(em: EntityManager, key: string, fileValue: unknown): Promise<boolean> {
  const seen = await em.findOne(SettingRecord, { key: `seed:${key}` });
  return seen?.value !== hashOf(fileValue);
}

/** Records that the file's value for `key` has been applied; call only after it was. */
async function markApplied(em: EntityManager, key: string, fileValue: unknown): Promise<void> {
  await saveSetting(em, `seed:${key}`, hashOf(fileValue));
}

async function seededSetting<T>(em: EntityManager, key: string, fileValue: T): Promise<T> {
  const stored = await em.findOne(SettingRecord, { key });
  if ((await fileChanged(em, key, fileValue)) || !stored) {
    await saveSetting(em, key, fileValue);
    await markApplied(em, key, fileValue);
    return fileValue;
  }
  return stored.value as T;
}

/** Loads the run-time settings, applying the file's sections where they changed. */
export async function loadSettings(
  store: Store,
  file: { toolManager?: ToolManagerSettings; client?: ClientSettings },
): Promise<RuntimeSettings> {
  const em = store.fork();
  const toolManager = await seededSetting(em, SETTING_TOOL_MANAGER, file.toolManager ?? DEFAULT_TOOL_MANAGER);
  const client = await seededSetting(em, SETTING_CLIENT, file.client ?? DEFAULT_CLIENT);
  await em.flush();
  return new RuntimeSettings({ ...DEFAULT_TOOL_MANAGER, ...toolManager }, { ...DEFAULT_CLIENT, ...client });
}

/** Creates or updates the MCP clients the config file declares. A client that breaks a rule stops boot. */
export async function seedMcpClients(store: Store, clients: readonly McpClientSpec[], logger: Logger): Promise<void> {
  for (const [i, spec] of clients.entries()) {
    const prefix = `mcp.client_configs[${i}].`;
    const em = store.fork();
    const seedKey = `mcp_client:${spec.name}`;
    const existing = await findClientByName(em, spec.name);
    if (existing && !(await fileChanged(em, seedKey, spec))) continue;
    if (!existing) {
      validateSpec(spec, prefix);
      const rec = await insertClient(em, spec, { source: "config", verified: false, tools: [] });
      await markApplied(em, seedKey, spec);
      logger.info({ client_id: rec.id, client: spec.name }, "MCP client created from the config file");
      continue;
    }
    const current = recordToSpec(existing);
    for (const field of changedImmutableFields(current, spec)) {
      logger.warn({ client: spec.name, field }, `config file changes immutable field ${field} of MCP client "${spec.name}"; ignored (delete and recreate the client to change it)`);
    }
    let perUserHeaderKeys = spec.perUserHeaderKeys;
    if (current.authType === "per_user_headers" && perUserHeaderKeys.length === 0) {
      logger.warn({ client: spec.name }, `config file empties per_user_header_keys of MCP client "${spec.name}"; ignored, the stored keys stay`);
      perUserHeaderKeys = current.perUserHeaderKeys;
    }
    const next: McpClientSpec = {
      ...spec,
      connectionType: current.connectionType,
      connectionString: current.connectionString,
      stdioConfig: current.stdioConfig,
      authType: current.authType,
      perUserHeaderKeys,
    };
    validateSpec(next, prefix);
    assignSpec(existing, next);
    await em.flush();
    await markApplied(em, seedKey, spec);
    logger.info({ client_id: existing.id, client: spec.name }, "MCP client updated from the config file");
  }
}

/** Creates or overwrites the providers the config file declares, each only when its file entry changed. */
export async function seedProviders(store: Store, providers: Readonly<Record<string, Wire>>, logger: Logger): Promise<void> {
  for (const [name, wire] of Object.entries(providers)) {
    const em = store.fork();
    const seedKey = `provider:${name}`;
    const existing = await em.findOne(ProviderRecord, { name });
    if (existing && !(await fileChanged(em, seedKey, wire))) continue;
    assignProvider(em, existing, parseProviderWire(name, wire, `providers.${name}`), "config");
    await em.flush();
    await markApplied(em, seedKey, wire);
    logger.info({ provider: name }, existing ? "provider updated from the config file" : "provider created from the config file");
  }
}

/** Creates or overwrites the virtual keys the config file declares, each only when its file entry changed. */
export async function seedVirtualKeys(store: Store, keys: readonly Wire[], logger: Logger): Promise<void> {
  for (const [index, wire] of keys.entries()) {
    const path = `governance.virtual_keys[${index}]`;
    const parsed = parseVirtualKeyWire(wire, path);
    const em = store.fork();
    const seedKey = `virtual_key:${parsed.key.id}`;
    const existing = await em.findOne(VirtualKeyRecord, { id: parsed.key.id });
    if (existing && !(await fileChanged(em, seedKey, wire))) continue;
    const field = await clashingKeyField(em, parsed.key.id, parsed.key.name, parsed.key.value);
    if (field !== null) throw invalidField(`${path}.${field}`, `is already used by another stored virtual key; every key needs its own ${field}`);
    assignVirtualKey(em, existing, parsed, "config");
    await em.flush();
    await markApplied(em, seedKey, wire);
    logger.info({ virtual_key_id: parsed.key.id }, existing ? "virtual key updated from the config file" : "virtual key created from the config file");
  }
}
