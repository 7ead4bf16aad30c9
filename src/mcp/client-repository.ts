/**
 * Persistence of MCP clients: the domain spec <-> McpClientRecord, lookups that turn "no such row" and
 * malformed ids into a clear not_found, and name uniqueness as a 409 before the database has to say so
 * (a 400 when a virtual MCP server has the name).
 */
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import { McpClientRecord, VirtualMcpServerRecord, writeRecord, type McpOauthConfig, type McpTokenExchangeConfig } from "../store/index.js";
import type { OauthConfigSpec } from "./oauth/oauth-config.js";
import type { TokenExchangeSpec } from "./token-exchange/token-exchange-config.js";
import type { McpClientSpec } from "./client-spec.js";
import type { DiscoveredTool } from "./discover.js";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Extracts the domain spec from a record. */
export function recordToSpec(rec: McpClientRecord): McpClientSpec {
  return {
    name: rec.name,
    connectionType: rec.connectionType,
    connectionString: rec.connectionString,
    stdioConfig: rec.stdioConfig ? { command: rec.stdioConfig.command, args: [...rec.stdioConfig.args], envs: [...rec.stdioConfig.envs] } : null,
    authType: rec.authType,
    headers: { ...rec.headers },
    perUserHeaderKeys: [...rec.perUserHeaderKeys],
    toolsToExecute: [...rec.toolsToExecute],
    toolsToAutoExecute: [...rec.toolsToAutoExecute],
    toolSyncInterval: rec.toolSyncInterval,
    needsSessionStickiness: rec.needsSessionStickiness,
    disabled: rec.disabled,
    allowOnAllVirtualKeys: rec.allowOnAllVirtualKeys,
    oauthConfig: rec.oauthConfig ? { ...rec.oauthConfig, scopes: [...rec.oauthConfig.scopes], clientSecret: rec.oauthClientSecret ?? "" } : null,
    isCodeModeClient: rec.isCodeModeClient,
    tokenExchange: rec.tokenExchange ? { ...rec.tokenExchange, scopes: [...rec.tokenExchange.scopes], clientSecret: rec.tokenExchangeClientSecret ?? "" } : null,
    toolPinning: rec.toolPinning,
  };
}

/** Copies a spec onto a record (all fields, so the record always equals the validated spec). */
export function assignSpec(rec: McpClientRecord, spec: McpClientSpec): void {
  rec.name = spec.name;
  rec.connectionType = spec.connectionType;
  rec.connectionString = spec.connectionString;
  rec.stdioConfig = spec.stdioConfig;
  rec.authType = spec.authType;
  rec.headers = spec.headers;
  rec.perUserHeaderKeys = spec.perUserHeaderKeys;
  rec.toolsToExecute = spec.toolsToExecute;
  rec.toolsToAutoExecute = spec.toolsToAutoExecute;
  rec.toolSyncInterval = spec.toolSyncInterval;
  rec.needsSessionStickiness = spec.needsSessionStickiness;
  rec.disabled = spec.disabled;
  rec.allowOnAllVirtualKeys = spec.allowOnAllVirtualKeys;
  rec.oauthConfig = spec.oauthConfig ? oauthColumns(spec.oauthConfig) : null;
  rec.oauthClientSecret = spec.oauthConfig && spec.oauthConfig.clientSecret !== "" ? spec.oauthConfig.clientSecret : null;
  rec.isCodeModeClient = spec.isCodeModeClient;
  rec.tokenExchange = spec.tokenExchange ? tokenExchangeColumns(spec.tokenExchange) : null;
  rec.tokenExchangeClientSecret = spec.tokenExchange && spec.tokenExchange.clientSecret !== "" ? spec.tokenExchange.clientSecret : null;
  rec.toolPinning = spec.toolPinning ?? false;
  // Pins outlive nothing: pinning turned on again starts from the definitions discovered then.
  if (!rec.toolPinning) rec.toolPins = {};
  rec.updatedAt = new Date();
}

/** The non-secret columns of an oauth_config. */
function oauthColumns(cfg: OauthConfigSpec): McpOauthConfig {
  const { clientSecret: _secret, ...rest } = cfg;
  return { ...rest, scopes: [...cfg.scopes] };
}

/** The non-secret columns of a token_exchange block. */
function tokenExchangeColumns(cfg: TokenExchangeSpec): McpTokenExchangeConfig {
  const { clientSecret: _secret, ...rest } = cfg;
  return { ...rest, scopes: [...cfg.scopes] };
}

/** Throws a 409 when another client already has this name, and a 400 when a virtual MCP server has it. */
export async function assertNameFree(em: EntityManager, name: string, exceptId?: string): Promise<void> {
  const other = await em.findOne(McpClientRecord, { name });
  if (other && other.id !== exceptId) {
    throw new GatewayError("already_exists", `an MCP client named "${name}" already exists`, { field: "name" });
  }
  // Both are served at /mcp/<name>.
  if (await em.findOne(VirtualMcpServerRecord, { name })) {
    throw invalidField("name", `"${name}" is the name of a virtual MCP server; MCP clients and virtual servers share /mcp/<name>, so pick another name`);
  }
}

/** Inserts a validated spec. */
export async function insertClient(
  em: EntityManager,
  spec: McpClientSpec,
  extra: { source: "api" | "config"; verified: boolean; tools: DiscoveredTool[] },
): Promise<McpClientRecord> {
  await assertNameFree(em, spec.name);
  const now = new Date();
  const { oauthConfig, tokenExchange, toolPinning, ...columns } = spec;
  const rec = em.create(McpClientRecord, {
    id: randomUUID(),
    ...columns,
    toolPinning: toolPinning ?? false,
    oauthConfig: oauthConfig ? oauthColumns(oauthConfig) : null,
    oauthClientSecret: oauthConfig && oauthConfig.clientSecret !== "" ? oauthConfig.clientSecret : null,
    tokenExchange: tokenExchange ? tokenExchangeColumns(tokenExchange) : null,
    tokenExchangeClientSecret: tokenExchange && tokenExchange.clientSecret !== "" ? tokenExchange.clientSecret : null,
    tools: extra.tools,
    source: extra.source,
    verified: extra.verified,
    createdAt: now,
    updatedAt: now,
  });
  await writeRecord(em, rec);
  return rec;
}

/** Loads a client by id or throws a 404 that names the id. */
export async function getClient(em: EntityManager, id: string): Promise<McpClientRecord> {
  const rec = UUID_PATTERN.test(id) ? await em.findOne(McpClientRecord, { id: id.toLowerCase() }) : null;
  if (!rec) throw new GatewayError("not_found", `no MCP client with id "${id}"`);
  return rec;
}

/** Finds a client by its unique name. */
export async function findClientByName(em: EntityManager, name: string): Promise<McpClientRecord | null> {
  return em.findOne(McpClientRecord, { name });
}

/** Lists clients ordered by name, with an optional case-insensitive name filter. */
export async function listClients(
  em: EntityManager,
  query: { limit: number; offset: number; search: string },
): Promise<{ items: McpClientRecord[]; total: number }> {
  const where = query.search ? { name: { $ilike: `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` } } : {};
  const [items, total] = await em.findAndCount(McpClientRecord, where, {
    orderBy: { name: "asc" },
    offset: query.offset,
    ...(query.limit > 0 ? { limit: query.limit } : {}),
  });
  return { items, total };
}

/** Lists every client (start-up, config seeding). */
export async function allClients(em: EntityManager): Promise<McpClientRecord[]> {
  return em.find(McpClientRecord, {}, { orderBy: { name: "asc" } });
}
