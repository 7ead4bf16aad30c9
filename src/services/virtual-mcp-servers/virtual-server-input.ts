/**
 * A virtual MCP server as the admin API and the config file give it (gw.admin.v1.VirtualMcpServer),
 * checked as far as that needs nothing but the message: the name, every member, every default applied.
 * What needs the store (the clients and tools the members name, names MCP clients already use) is
 * checked by virtual-server-records.ts.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RESERVED_CLIENT_NAMES } from "../../config/reserved-client-names.js";
import { GatewayError, invalidField } from "../../errors.js";
import type { VirtualServerDefinition } from "../../mcp/relay/virtual-servers.js";
import { messageFromJson } from "../../proto-json/message-from-json.js";
import type { StoredVirtualMember, VirtualMcpServerRecord } from "../../store/index.js";
import { VirtualMcpServerSchema, type VirtualMcpServer } from "../../../gen/gw/admin/v1/virtual_mcp_server_pb.js";

/** The stored columns of a virtual server, besides its bookkeeping. */
export type VirtualServerFields = Pick<VirtualMcpServerRecord, "name" | "description" | "members">;

/** The same rule as MCP client names: the two share /mcp/<name>, whose path segment is matched by it. */
const NAME_PATTERN = /^[A-Za-z0-9_]{1,64}$/;

function checkName(name: string, path: string): void {
  if (name === "") throw invalidField(path, "is required: the server is served at /mcp/<name>");
  if (RESERVED_CLIENT_NAMES.has(name)) throw invalidField(path, `"${name}" is reserved: /mcp/${name} is the MCP endpoint's own path; pick another name`);
  if (!NAME_PATTERN.test(name)) throw invalidField(path, `must be 1-64 letters, digits or underscores ("${name}"), as MCP client names are: both are served at /mcp/<name>`);
}

function checkTools(tools: readonly string[], path: string): string[] {
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (tool.trim() === "") throw invalidField(`${path}[${index}]`, "must not be empty");
    if (seen.has(tool)) throw invalidField(`${path}[${index}]`, `"${tool}" is listed twice`);
    seen.add(tool);
  });
  if (seen.has("*") && tools.length > 1) throw invalidField(path, `"*" means every tool and cannot be combined with named tools`);
  return [...tools];
}

/**
 * Checks a virtual server and fills in its defaults. `at` turns a field name into the path a 400 names
 * (the API passes the bare name, the config file its entry's path).
 */
export function parseVirtualServer(msg: VirtualMcpServer, at: (field: string) => string): VirtualServerFields {
  checkName(msg.name, at("name"));
  if (msg.members.length === 0) throw invalidField(at("members"), `needs at least one member, e.g. [{"client": "<MCP client name>", "tools": ["*"]}]`);
  const firstIndex = new Map<string, number>();
  const members: StoredVirtualMember[] = msg.members.map((member, index) => {
    const path = at(`members[${index}]`);
    if (member.client === "") throw invalidField(`${path}.client`, "is required: the name of an MCP client");
    const earlier = firstIndex.get(member.client);
    if (earlier !== undefined) throw invalidField(`${path}.client`, `"${member.client}" is also ${at(`members[${earlier}]`)}; list each client once`);
    firstIndex.set(member.client, index);
    return { client: member.client, tools: checkTools(member.tools, `${path}.tools`), resources: member.resources ?? true, prompts: member.prompts ?? true };
  });
  return { name: msg.name, description: msg.description, members };
}

/** The form /mcp/<name> serves. */
export function definitionOf(fields: VirtualServerFields): VirtualServerDefinition {
  return { name: fields.name, description: fields.description, members: fields.members.map((member) => ({ ...member, tools: [...member.tools] })) };
}

/** A virtual server from its REST JSON (the config file's form), read exactly as the API reads a body; `path` prefixes a 400's field. */
export function virtualServerFromJson(json: unknown, path: string): VirtualMcpServer {
  try {
    return messageFromJson(VirtualMcpServerSchema, json, "", {}).message as VirtualMcpServer;
  } catch (err) {
    if (err instanceof GatewayError && err.field !== undefined) throw invalidField(`${path}.${err.field}`, err.message.replace(/^[^:]*: /, ""));
    throw err;
  }
}

/** The API message of a stored virtual server, every default written out. */
export function virtualServerMessageOf(rec: VirtualMcpServerRecord): VirtualMcpServer {
  return create(VirtualMcpServerSchema, {
    name: rec.name,
    description: rec.description,
    members: rec.members.map((member) => ({ client: member.client, tools: [...member.tools], resources: member.resources, prompts: member.prompts })),
    createdAt: timestampFromDate(rec.createdAt),
    updatedAt: timestampFromDate(rec.updatedAt),
  });
}
