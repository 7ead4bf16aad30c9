/**
 * Seeds the store from the config file, at boot and again on a config reload (SIGHUP). The store is the
 * source of truth: a file section is applied only when it changed since the boot or reload that last
 * applied it (a hash is kept per section), so edits made through the API survive restarts until the file
 * itself changes. When a client's file entry changes, its mutable fields are applied, immutable-field edits
 * are ignored with a warning, and per_user_header_keys is never emptied by the file. One seeding is one
 * transaction: an entry that breaks a rule leaves the store as it was.
 */
import { createHash } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  DEFAULT_CLIENT,
  DEFAULT_LOAD_BALANCER,
  DEFAULT_TOOL_MANAGER,
  type LoadBalancerSettings,
  RuntimeSettings,
  type ClientSettings,
  type ToolManagerSettings,
} from "../config/runtime-settings.js";
import { changedImmutableFields, validateSpec, type McpClientSpec } from "../mcp/client-spec.js";
import { assignSpec, findClientByName, insertClient, recordToSpec } from "../mcp/client-repository.js";
import { invalidField } from "../errors.js";
import { GovernanceGroupRecord, GuardrailRecord, inNativeTransaction, ProviderRecord, RoutingRuleRecord, SettingRecord, VirtualKeyRecord, VirtualMcpServerRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { parseProviderWire } from "./inference/provider-wire.js";
import { assignProvider, assignRoutingRule, assignVirtualKey, checkRuleReferences, clashingKeyField } from "./inference/records.js";
import { GROUP_SECTION, type FileGroups } from "./inference/config.js";
import { assignGroup, checkGroupReferences, checkKeyMembership, GROUP_KINDS, parseGroupWire } from "./inference/group-records.js";
import { parseRoutingRule, routingRuleFromJson } from "./inference/routing-rule-input.js";
import { parseVirtualKeyWire } from "./inference/virtual-key-wire.js";
import type { Wire } from "../config/wire-fields.js";
import { SETTING_CLIENT, SETTING_LOAD_BALANCER, SETTING_TOOL_MANAGER, saveSetting } from "./settings-service.js";
import { guardrailFilePath } from "./guardrails/guardrail-file.js";
import { guardrailFromJson, parseGuardrail } from "./guardrails/guardrail-input.js";
import { assignGuardrail, resolveGuardrailReferences } from "./guardrails/guardrail-records.js";
import { virtualServerFilePath } from "./virtual-mcp-servers/virtual-server-file.js";
import { parseVirtualServer, virtualServerFromJson } from "./virtual-mcp-servers/virtual-server-input.js";
import { assignVirtualServer, checkMembers, checkNameFreeOfClients } from "./virtual-mcp-servers/virtual-server-records.js";

/** What the config file declares that seeds the store; absent settings seed the defaults. */
export interface SeedInput {
  toolManager?: ToolManagerSettings;
  client?: ClientSettings;
  loadBalancer?: LoadBalancerSettings;
  mcpClients: readonly McpClientSpec[];
  /** Provider name -> wire JSON {keys, network_config}. */
  providers: Readonly<Record<string, Wire>>;
  virtualKeys: readonly Wire[];
  /** governance.routing_rules as REST JSON; seeded after the keys they may name. */
  routingRules: readonly Wire[];
  /** governance.business_units, customers and teams; seeded before the keys that name them. */
  groups: FileGroups;
  /** `guardrails` as REST JSON; seeded last, after every owner and provider they may name. */
  guardrails?: readonly Wire[];
  /** `mcp.virtual_servers` as REST JSON; seeded after the MCP clients their members name. */
  virtualMcpServers?: readonly Wire[];
}

/** What one seeding wrote: the sections whose file entry changed since it was last applied. */
export interface SeedChanges {
  toolManager: boolean;
  client: boolean;
  loadBalancer: boolean;
  mcpClients: { id: string; name: string }[];
  providers: string[];
  virtualKeyIds: string[];
  routingRuleIds: string[];
  groupIds: string[];
  guardrailIds: string[];
  virtualMcpServerNames: string[];
}

/** A log line held back until the transaction that it reports has committed. */
interface Note {
  fields: Record<string, unknown>;
  msg: string;
}

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

/**
 * What a settings section says beyond the defaults. Its hash marks the section as applied, so a release
 * that changes a default does not count as a changed file and overwrite settings changed through the API.
 */
function beyondDefaults<T extends object>(value: T, defaults: T): Partial<T> {
  const said: Partial<T> = {};
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (JSON.stringify(value[key]) !== JSON.stringify(defaults[key])) said[key] = value[key];
  }
  return said;
}

/**
 * Writes a settings row from the file when the file's section changed or the row is missing; true when
 * written. Without the section in a file (`fileValue` undefined) the defaults are written only once.
 */
async function seedSetting<T extends object>(em: EntityManager, key: string, fileValue: T | undefined, defaults: T): Promise<boolean> {
  const stored = await em.findOne(SettingRecord, { key });
  const said = beyondDefaults(fileValue ?? defaults, defaults);
  if (stored && (fileValue === undefined || !(await fileChanged(em, key, said)))) return false;
  await saveSetting(em, key, fileValue ?? defaults);
  await markApplied(em, key, said);
  return true;
}

/**
 * Applies every file section that changed since it was last applied, in one transaction, and logs each
 * write once it has committed. An entry that breaks a rule throws (naming its path) and nothing is written.
 */
export async function seedStore(store: Store, input: SeedInput, logger: Logger): Promise<SeedChanges> {
  const notes: Note[] = [];
  // Every write below is a native statement, never a flush, so seeding enters no AsyncLocalStorage on the
  // serving thread (store/native-transaction.ts says why that matters).
  const changes = await inNativeTransaction(store, async (em): Promise<SeedChanges> => ({
    toolManager: await seedSetting(em, SETTING_TOOL_MANAGER, input.toolManager, DEFAULT_TOOL_MANAGER),
    client: await seedSetting(em, SETTING_CLIENT, input.client, DEFAULT_CLIENT),
    loadBalancer: await seedSetting(em, SETTING_LOAD_BALANCER, input.loadBalancer, DEFAULT_LOAD_BALANCER),
    mcpClients: await seedMcpClients(em, input.mcpClients, logger, notes),
    providers: await seedProviders(em, input.providers, notes),
    groupIds: await seedGroups(em, input.groups, notes),
    virtualKeyIds: await seedVirtualKeys(em, input.virtualKeys, notes),
    routingRuleIds: await seedRoutingRules(em, input.routingRules, notes),
    guardrailIds: await seedGuardrails(em, input.guardrails ?? [], notes),
    virtualMcpServerNames: await seedVirtualMcpServers(em, input.virtualMcpServers ?? [], notes),
  }));
  // Without a file the defaults are written once, which is nothing to report.
  if (changes.toolManager && input.toolManager) notes.push({ fields: {}, msg: "tool manager settings applied from the config file" });
  if (changes.loadBalancer && input.loadBalancer) notes.push({ fields: {}, msg: "load balancer settings applied from the config file" });
  if (changes.client && input.client) notes.push({ fields: {}, msg: "client settings applied from the config file" });
  for (const note of notes) logger.info(note.fields, note.msg);
  return changes;
}

/** The stored run-time settings over the defaults (after seedStore, the file's or the API's). */
export async function readSettings(store: Store): Promise<{ toolManager: ToolManagerSettings; client: ClientSettings; loadBalancer: LoadBalancerSettings }> {
  const em = store.fork();
  const toolManager = await em.findOne(SettingRecord, { key: SETTING_TOOL_MANAGER });
  const client = await em.findOne(SettingRecord, { key: SETTING_CLIENT });
  const loadBalancer = await em.findOne(SettingRecord, { key: SETTING_LOAD_BALANCER });
  return {
    loadBalancer: { ...DEFAULT_LOAD_BALANCER, ...(loadBalancer?.value as Partial<LoadBalancerSettings> | undefined) },
    toolManager: { ...DEFAULT_TOOL_MANAGER, ...(toolManager?.value as Partial<ToolManagerSettings> | undefined) },
    client: { ...DEFAULT_CLIENT, ...(client?.value as Partial<ClientSettings> | undefined) },
  };
}

/** The live run-time settings, loaded from the store. */
export async function loadSettings(store: Store): Promise<RuntimeSettings> {
  const { toolManager, client, loadBalancer } = await readSettings(store);
  return new RuntimeSettings(toolManager, client, loadBalancer);
}

/** Creates or updates the MCP clients the config file declares; returns those written. */
async function seedMcpClients(em: EntityManager, clients: readonly McpClientSpec[], logger: Logger, notes: Note[]): Promise<{ id: string; name: string }[]> {
  const written: { id: string; name: string }[] = [];
  for (const [i, spec] of clients.entries()) {
    const prefix = `mcp.client_configs[${i}].`;
    const seedKey = `mcp_client:${spec.name}`;
    const existing = await findClientByName(em, spec.name);
    if (existing && !(await fileChanged(em, seedKey, spec))) continue;
    if (!existing) {
      validateSpec(spec, prefix);
      const rec = await insertClient(em, spec, { source: "config", verified: false, tools: [] });
      await markApplied(em, seedKey, spec);
      notes.push({ fields: { client_id: rec.id, client: spec.name }, msg: "MCP client created from the config file" });
      written.push({ id: rec.id, name: spec.name });
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
    await writeRecord(em, existing);
    await markApplied(em, seedKey, spec);
    notes.push({ fields: { client_id: existing.id, client: spec.name }, msg: "MCP client updated from the config file" });
    written.push({ id: existing.id, name: spec.name });
  }
  return written;
}

/**
 * Applies one entity the config file declares when it is new or its file entry changed since it was last
 * applied: `apply` checks it against the store and assigns it (creating it when `existing` is null) and
 * returns the record, which is written, marked applied and noted as `<what> created|updated`. True when written.
 */
async function seedEntity(
  em: EntityManager,
  notes: Note[],
  entry: { seedKey: string; fileValue: unknown; existing: object | null; apply: () => Promise<object> | object; what: string; fields: Record<string, unknown> },
): Promise<boolean> {
  if (entry.existing && !(await fileChanged(em, entry.seedKey, entry.fileValue))) return false;
  await writeRecord(em, await entry.apply());
  await markApplied(em, entry.seedKey, entry.fileValue);
  notes.push({ fields: entry.fields, msg: `${entry.what} ${entry.existing ? "updated" : "created"} from the config file` });
  return true;
}

/** Creates or overwrites the providers the config file declares, each only when its file entry changed; returns their names. */
async function seedProviders(em: EntityManager, providers: Readonly<Record<string, Wire>>, notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const [name, wire] of Object.entries(providers)) {
    const existing = await em.findOne(ProviderRecord, { name });
    const apply = (): ProviderRecord => assignProvider(em, existing, parseProviderWire(name, wire, `providers.${name}`), "config");
    if (await seedEntity(em, notes, { seedKey: `provider:${name}`, fileValue: wire, existing, apply, what: "provider", fields: { provider: name } })) written.push(name);
  }
  return written;
}

/** Creates or overwrites the virtual keys the config file declares, each only when its file entry changed; returns their ids. */
async function seedVirtualKeys(em: EntityManager, keys: readonly Wire[], notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const [index, wire] of keys.entries()) {
    const path = `governance.virtual_keys[${index}]`;
    const parsed = parseVirtualKeyWire(wire, path);
    const existing = await em.findOne(VirtualKeyRecord, { id: parsed.key.id });
    const apply = async (): Promise<VirtualKeyRecord> => {
      const field = await clashingKeyField(em, parsed.key.id, parsed.key.name, parsed.key.value);
      if (field !== null) throw invalidField(`${path}.${field}`, `is already used by another stored virtual key; every key needs its own ${field}`);
      await checkKeyMembership(em, parsed, (name) => `${path}.${name}`);
      return assignVirtualKey(em, existing, parsed, "config");
    };
    const entry = { seedKey: `virtual_key:${parsed.key.id}`, fileValue: wire, existing, apply, what: "virtual key", fields: { virtual_key_id: parsed.key.id } };
    if (await seedEntity(em, notes, entry)) written.push(parsed.key.id);
  }
  return written;
}

/** Creates or updates the routing rules the config file declares; returns the ids written. */
async function seedRoutingRules(em: EntityManager, rules: readonly Wire[], notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const [index, wire] of rules.entries()) {
    const path = `governance.routing_rules[${index}]`;
    const at = (field: string): string => `${path}.${field}`;
    const parsed = parseRoutingRule(routingRuleFromJson(wire, path), at);
    const existing = await em.findOne(RoutingRuleRecord, { id: parsed.fields.id });
    const apply = async (): Promise<RoutingRuleRecord> => {
      await checkRuleReferences(em, parsed, at);
      return assignRoutingRule(em, existing, parsed, "config");
    };
    const entry = { seedKey: `routing_rule:${parsed.fields.id}`, fileValue: wire, existing, apply, what: "routing rule", fields: { routing_rule_id: parsed.fields.id } };
    if (await seedEntity(em, notes, entry)) written.push(parsed.fields.id);
  }
  return written;
}

/** Creates or updates the business units, customers and teams the config file declares (parents first); returns the ids written. */
async function seedGroups(em: EntityManager, groups: FileGroups, notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const kind of GROUP_KINDS) {
    for (const [index, wire] of groups[kind].entries()) {
      const path = `governance.${GROUP_SECTION[kind]}[${index}]`;
      const at = (field: string): string => `${path}.${field}`;
      const parsed = parseGroupWire(kind, wire, at);
      const existing = await em.findOne(GovernanceGroupRecord, { id: parsed.fields.id, kind });
      const apply = async (): Promise<GovernanceGroupRecord> => {
        await checkGroupReferences(em, parsed, at);
        return assignGroup(em, existing, parsed, "config");
      };
      const entry = { seedKey: `${kind}:${parsed.fields.id}`, fileValue: wire, existing, apply, what: kind.replace("_", " "), fields: { id: parsed.fields.id, kind } };
      if (await seedEntity(em, notes, entry)) written.push(parsed.fields.id);
    }
  }
  return written;
}

/** Creates or updates the guardrails the config file declares; returns the ids written. */
async function seedGuardrails(em: EntityManager, guardrails: readonly Wire[], notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const [index, wire] of guardrails.entries()) {
    const path = guardrailFilePath(index);
    const at = (field: string): string => `${path}.${field}`;
    const msg = guardrailFromJson(wire, path);
    const existing = await em.findOne(GuardrailRecord, { id: msg.id });
    const apply = async (): Promise<GuardrailRecord> => {
      const parsed = parseGuardrail(msg, at, existing?.secretHeaders ?? null);
      return assignGuardrail(em, existing, await resolveGuardrailReferences(em, parsed, at), "config");
    };
    const entry = { seedKey: `guardrail:${msg.id}`, fileValue: wire, existing, apply, what: "guardrail", fields: { guardrail_id: msg.id } };
    if (await seedEntity(em, notes, entry)) written.push(msg.id);
  }
  return written;
}

/**
 * Creates or updates the virtual MCP servers the config file declares; returns the names written. The
 * tools a member names are not checked against what its client listed: the file is applied before any
 * client has connected, and a tool that does not exist is simply not offered.
 */
async function seedVirtualMcpServers(em: EntityManager, servers: readonly Wire[], notes: Note[]): Promise<string[]> {
  const written: string[] = [];
  for (const [index, wire] of servers.entries()) {
    const path = virtualServerFilePath(index);
    const at = (field: string): string => `${path}.${field}`;
    const fields = parseVirtualServer(virtualServerFromJson(wire, path), at);
    const existing = await em.findOne(VirtualMcpServerRecord, { name: fields.name });
    const apply = async (): Promise<VirtualMcpServerRecord> => {
      await checkNameFreeOfClients(em, fields.name, at);
      await checkMembers(em, fields.members, at, [], "none");
      return assignVirtualServer(em, existing, fields, "config");
    };
    const entry = { seedKey: `virtual_mcp_server:${fields.name}`, fileValue: wire, existing, apply, what: "virtual MCP server", fields: { virtual_server: fields.name } };
    if (await seedEntity(em, notes, entry)) written.push(fields.name);
  }
  return written;
}
