/**
 * gw.admin.v1.VirtualMcpServerService: virtual MCP servers. Every write is checked by the same parser the
 * config file uses and against the stored clients, persisted, then applied to the in-memory servers
 * /mcp/<name> reads.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError, invalidField } from "../errors.js";
import type { VirtualServers } from "../mcp/relay/virtual-servers.js";
import { applyFieldMask } from "../proto-json/field-mask.js";
import { deleteRecord, insertRecord, VirtualMcpServerRecord, writeRecord, type Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { VirtualMcpServerSchema, VirtualMcpServerService, type VirtualMcpServer } from "../../gen/gw/admin/v1/virtual_mcp_server_pb.js";
import { emOf } from "./context.js";
import { FOR_UPDATE, writeEntity } from "./entity-write-lock.js";
import { definitionOf, parseVirtualServer, virtualServerMessageOf } from "./virtual-mcp-servers/virtual-server-input.js";
import { assignVirtualServer, checkMembers, checkNameFreeOfClients } from "./virtual-mcp-servers/virtual-server-records.js";

/** What the virtual MCP server service needs. */
export interface VirtualMcpServerServiceDeps {
  store: Store;
  logger: Logger;
  /** The servers /mcp/<name> reads; every write is applied to it. */
  virtualServers: VirtualServers;
}

/** The API names fields as they are; the config file prefixes its entry's path. */
const asIs = (field: string): string => field;

function given(server: VirtualMcpServer | undefined): VirtualMcpServer {
  if (server === undefined) throw invalidField("virtual_server", "is required");
  return server;
}

/** A stored virtual server, or a 404; `forUpdate` locks its row for the write's transaction. */
async function getRecord(em: EntityManager, name: string, forUpdate = false): Promise<VirtualMcpServerRecord> {
  if (name.trim() === "") throw invalidField("name", "is required");
  const rec = await em.findOne(VirtualMcpServerRecord, { name }, forUpdate ? FOR_UPDATE : {});
  if (!rec) throw new GatewayError("not_found", `virtual MCP server "${name}" does not exist`, { type: "virtual_mcp_server_not_found" });
  return rec;
}

/** Creates the service implementation. */
export function createVirtualMcpServerService(deps: VirtualMcpServerServiceDeps): ServiceImpl<typeof VirtualMcpServerService> {
  const { store, logger, virtualServers } = deps;
  return {
    async createVirtualMcpServer(req) {
      const fields = parseVirtualServer(given(req.virtualServer), asIs);
      const rec = await writeEntity(store, { kind: "virtual_mcp_server", id: fields.name }, async (em) => {
        await checkNameFreeOfClients(em, fields.name, asIs);
        if (await em.findOne(VirtualMcpServerRecord, { name: fields.name })) {
          throw new GatewayError("already_exists", `virtual MCP server "${fields.name}" already exists`, { field: "name" });
        }
        await checkMembers(em, fields.members, asIs);
        const created = assignVirtualServer(em, null, fields, "api");
        await insertRecord(em, created);
        return created;
      }, () => virtualServers.put(definitionOf(fields)));
      logger.info({ virtual_server: rec.name, members: fields.members.map((member) => member.client) }, "virtual MCP server created");
      return { virtualServer: virtualServerMessageOf(rec) };
    },

    async listVirtualMcpServers(_req, ctx) {
      const recs = await emOf(ctx, store).find(VirtualMcpServerRecord, {}, { orderBy: { name: "asc" } });
      return { virtualServers: recs.map((rec) => virtualServerMessageOf(rec)), count: recs.length };
    },

    async getVirtualMcpServer(req, ctx) {
      return { virtualServer: virtualServerMessageOf(await getRecord(emOf(ctx, store), req.name)) };
    },

    async updateVirtualMcpServer(req) {
      const paths = req.updateMask?.paths ?? [];
      const { rec } = await writeEntity(store, { kind: "virtual_mcp_server", id: req.name }, async (em) => {
        const rec = await getRecord(em, req.name, true);
        const next = applyFieldMask(VirtualMcpServerSchema, virtualServerMessageOf(rec), given(req.virtualServer), paths, "a virtual MCP server");
        const fields = parseVirtualServer(next, asIs);
        await checkMembers(em, fields.members, asIs, rec.members);
        assignVirtualServer(em, rec, fields, rec.source);
        await writeRecord(em, rec);
        return { rec, fields };
      }, ({ fields }) => virtualServers.put(definitionOf(fields)));
      logger.info({ virtual_server: rec.name, fields: paths }, "virtual MCP server updated");
      return { virtualServer: virtualServerMessageOf(rec) };
    },

    async deleteVirtualMcpServer(req) {
      const rec = await writeEntity(store, { kind: "virtual_mcp_server", id: req.name }, async (em) => {
        const found = await getRecord(em, req.name, true);
        await deleteRecord(em, found);
        return found;
      }, (found) => virtualServers.remove(found.name));
      logger.info({ virtual_server: rec.name }, "virtual MCP server deleted");
      return { status: "success" };
    },
  };
}
