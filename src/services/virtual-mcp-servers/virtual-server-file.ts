/**
 * The config file's `mcp.virtual_servers`: checked when the file is loaded, as far as that can be done
 * without the store (a bad entry throws a 400 naming its path, so a bad file stops start-up), and kept as
 * REST JSON for seeding, which checks the clients the members name against the store.
 */
import type { VirtualMcpServerFileConfig } from "../../config/file-config.js";
import { invalidField } from "../../errors.js";
import { parseVirtualServer, virtualServerFromJson } from "./virtual-server-input.js";

/** One entry's path, for messages. */
export function virtualServerFilePath(index: number): string {
  return `mcp.virtual_servers[${index}]`;
}

/** Checks every entry of the file's `mcp.virtual_servers` against each other and the file's clients; returns them as REST JSON, in order. */
export function virtualServersFromFile(entries: readonly VirtualMcpServerFileConfig[], clientNames: readonly string[]): Record<string, unknown>[] {
  const names = new Map<string, number>();
  return entries.map((entry, index) => {
    const path = virtualServerFilePath(index);
    const { name } = parseVirtualServer(virtualServerFromJson(entry, path), (field) => `${path}.${field}`);
    const same = names.get(name);
    if (same !== undefined) throw invalidField(`${path}.name`, `"${name}" is also the name of ${virtualServerFilePath(same)}; names are unique`);
    const client = clientNames.indexOf(name);
    if (client >= 0) throw invalidField(`${path}.name`, `"${name}" is also the name of mcp.client_configs[${client}]; MCP clients and virtual servers share /mcp/<name>, so pick another name`);
    names.set(name, index);
    return entry;
  });
}
