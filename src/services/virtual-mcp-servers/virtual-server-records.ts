/**
 * Virtual MCP servers against the store: the clients and tools a server's members name must exist, and
 * its name must be no MCP client's (the two share /mcp/<name>). Also writes records and loads them into
 * memory.
 */
import { isDeepStrictEqual } from "node:util";
import type { EntityManager } from "@mikro-orm/postgresql";
import { invalidField } from "../../errors.js";
import type { VirtualServerDefinition, VirtualServers } from "../../mcp/relay/virtual-servers.js";
import { McpClientRecord, VirtualMcpServerRecord, type StoredVirtualMember, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import { definitionOf, parseVirtualServer, virtualServerMessageOf, type VirtualServerFields } from "./virtual-server-input.js";

/** How far the tools a member names are checked. */
export type ToolCheck = "discovered" | "none";

/** At most this many tool names are quoted in a message. */
const QUOTED_TOOLS = 20;

function quoted(names: readonly string[]): string {
  const shown = names.slice(0, QUOTED_TOOLS).map((name) => `"${name}"`);
  return names.length > QUOTED_TOOLS ? `${shown.join(", ")} and ${names.length - QUOTED_TOOLS} more` : shown.join(", ");
}

/** A 400 naming `name` when an MCP client already has it. */
export async function checkNameFreeOfClients(em: EntityManager, name: string, at: (field: string) => string): Promise<void> {
  if (await em.findOne(McpClientRecord, { name })) {
    throw invalidField(at("name"), `"${name}" is the name of an MCP client; MCP clients and virtual servers share /mcp/<name>, so pick another name`);
  }
}

/**
 * Checks what the members name against the stored clients. `previous` holds the stored members an update
 * changes: a client it had, and the tools it named, are not looked up again, so a read sent back as an
 * update still works after a client or tool went away. With `tools` "none" only the clients are checked
 * (the config file is applied before any client has listed its tools).
 */
export async function checkMembers(
  em: EntityManager,
  members: readonly StoredVirtualMember[],
  at: (field: string) => string,
  previous: readonly StoredVirtualMember[] = [],
  tools: ToolCheck = "discovered",
): Promise<void> {
  for (const [index, member] of members.entries()) {
    const path = at(`members[${index}]`);
    const before = previous.find((old) => old.client === member.client);
    const named = member.tools.filter((tool) => tool !== "*" && !(before?.tools.includes(tool) ?? false));
    if (before !== undefined && named.length === 0) continue;
    const client = await em.findOne(McpClientRecord, { name: member.client });
    if (client === null) throw invalidField(`${path}.client`, `names no MCP client: "${member.client}" does not exist`);
    if (tools === "none") continue;
    const known = client.tools.map((tool) => tool.name);
    for (const tool of named) {
      if (known.includes(tool)) continue;
      const field = `${path}.tools[${member.tools.indexOf(tool)}]`;
      if (known.length === 0) throw invalidField(field, `"${tool}" is not a tool of MCP client "${member.client}": it has listed no tools yet; use ["*"] or wait until it has connected`);
      throw invalidField(field, `"${tool}" is not a tool of MCP client "${member.client}"; its tools are ${quoted(known)}`);
    }
  }
}

/** Writes checked fields onto a record (a new one when `existing` is null). */
export function assignVirtualServer(em: EntityManager, existing: VirtualMcpServerRecord | null, fields: VirtualServerFields, source: "api" | "config"): VirtualMcpServerRecord {
  if (existing === null) return em.create(VirtualMcpServerRecord, { ...fields, source });
  existing.description = fields.description;
  // jsonb gives the members back with their keys reordered; assigning equal members would count as a change.
  if (!isDeepStrictEqual(existing.members, fields.members)) existing.members = fields.members;
  return existing;
}

/** A stored virtual server's definition; null (and logged) when it no longer passes validation. */
function storedVirtualServer(rec: VirtualMcpServerRecord, logger: Logger): VirtualServerDefinition | null {
  try {
    return definitionOf(parseVirtualServer(virtualServerMessageOf(rec), (field) => field));
  } catch (err) {
    logger.error({ err, virtual_server: rec.name }, "stored virtual MCP server no longer passes validation; it is not served until fixed through the API");
    return null;
  }
}

/** Loads every stored virtual server into `servers` (boot, config reload, a lost change listener). */
export async function loadVirtualServers(store: Store, servers: VirtualServers, logger: Logger): Promise<void> {
  const definitions: VirtualServerDefinition[] = [];
  for (const rec of await store.fork().find(VirtualMcpServerRecord, {}, { orderBy: { name: "asc" } })) {
    const definition = storedVirtualServer(rec, logger);
    if (definition !== null) definitions.push(definition);
  }
  servers.replaceAll(definitions);
}

/** Reads one virtual server back into `servers` (another node's change): put as stored, or removed when gone or no longer valid. */
export async function reloadVirtualServer(store: Store, servers: VirtualServers, logger: Logger, name: string): Promise<void> {
  const rec = await store.fork().findOne(VirtualMcpServerRecord, { name });
  const definition = rec === null ? null : storedVirtualServer(rec, logger);
  if (definition === null) servers.remove(name);
  else servers.put(definition);
}
