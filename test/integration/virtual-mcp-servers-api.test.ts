/**
 * Virtual MCP servers through the admin API: CRUD over REST and Connect with every default filled in,
 * read-modify-write, the members checked against the stored clients and the tools they listed, one
 * namespace for client and virtual server names, and each refused input answered with a 400 naming its
 * field.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { VirtualMcpServerService } from "../../gen/gw/admin/v1/virtual_mcp_server_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { remoteClient, waitHealthy } from "../helpers/relay-client.js";
import { startRelayUpstream, TOOLS, type RelayUpstreamListener } from "../helpers/relay-upstream.js";

type Json = Record<string, any /* JSON of any shape */>;

const PATH = "/api/mcp/virtual-servers";
const ALL_TOOLS = TOOLS.map((tool) => tool.name);

let upstream: RelayUpstreamListener;
let app: TestApp;

before(async () => {
  upstream = await startRelayUpstream();
  app = await startApp({ mcpClients: [remoteClient("up", "http", upstream.httpUrl, ALL_TOOLS), remoteClient("other", "http", upstream.httpUrl, ALL_TOOLS)] });
  await waitHealthy(app, ["up", "other"]);
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

/** A fresh name for a server. */
function fresh(): string {
  return `vs_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** A valid body with a fresh name, changed by `patch`. */
function body(patch: Json = {}): Json {
  return { name: fresh(), members: [{ client: "up", tools: ["echo", "rich"] }, { client: "other", tools: ["*"] }], ...patch };
}

async function create(patch: Json = {}): Promise<Json> {
  const res = await api(app, "POST", PATH, body(patch));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.virtual_server;
}

/** The API's view of a server without the timestamp a write moves. */
function stable(server: Json): Json {
  const { updated_at: _updated, ...rest } = server;
  return rest;
}

describe("virtual MCP server CRUD", () => {
  test("creates a server with every default filled in", async () => {
    const name = fresh();
    const created = await create({ name, members: [{ client: "up", tools: ["echo"] }] });
    const { created_at: createdAt, updated_at: updatedAt, ...rest } = created;
    assert.deepEqual(rest, { name, description: "", members: [{ client: "up", tools: ["echo"], resources: true, prompts: true }] });
    assert.equal(typeof createdAt, "string");
    assert.equal(typeof updatedAt, "string");
  });

  test("reads a server back by name and in the list", async () => {
    const created = await create({ description: "for the docs team" });
    const got = await api(app, "GET", `${PATH}/${created.name}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.deepEqual(got.body.virtual_server, created);
    const listed = await api(app, "GET", PATH);
    assert.equal(listed.status, 200);
    assert.ok(listed.body.virtual_servers.some((server: Json) => server.name === created.name));
    assert.equal(listed.body.count, listed.body.virtual_servers.length);
  });

  test("changes only the fields a PUT names", async () => {
    const created = await create({ description: "before" });
    const updated = await api(app, "PUT", `${PATH}/${created.name}`, { description: "after" });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(stable(updated.body.virtual_server), stable({ ...created, description: "after" }));
  });

  test("replaces the members when a PUT names them", async () => {
    const created = await create();
    const members = [{ client: "other", tools: [], resources: false, prompts: true }];
    const updated = await api(app, "PUT", `${PATH}/${created.name}`, { members });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(updated.body.virtual_server.members, members);
  });

  test("accepts a PUT of what GET returned and changes nothing", async () => {
    const created = await create({ description: "round trip", members: [{ client: "up", tools: ["echo"], resources: false }, { client: "other", tools: [] }] });
    const got = await api(app, "GET", `${PATH}/${created.name}`);
    const put = await api(app, "PUT", `${PATH}/${created.name}`, got.body.virtual_server);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.virtual_server, got.body.virtual_server);
  });

  test("refuses a PUT that changes the name, naming it", async () => {
    const created = await create();
    const res = await api(app, "PUT", `${PATH}/${created.name}`, { name: fresh() });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^name: is immutable/);
  });

  test("deletes a server, after which it reads as not found", async () => {
    const created = await create();
    const deleted = await api(app, "DELETE", `${PATH}/${created.name}`);
    assert.deepEqual(deleted, { status: 200, body: { status: "success" } });
    const got = await api(app, "GET", `${PATH}/${created.name}`);
    assert.equal(got.status, 404);
    assert.equal(got.body.error.type, "virtual_mcp_server_not_found");
  });

  test("answers 404 for a name that names no server", async () => {
    for (const [method, payload] of [["GET", undefined], ["PUT", { description: "x" }], ["DELETE", undefined]] as const) {
      const res = await api(app, method, `${PATH}/nosuch`, payload);
      assert.equal(res.status, 404, `${method}: ${JSON.stringify(res.body)}`);
    }
  });

  test("refuses a second server with a name already taken, with a 409", async () => {
    const first = await create();
    const res = await api(app, "POST", PATH, body({ name: first.name }));
    assert.equal(res.status, 409, JSON.stringify(res.body));
  });

  test("creates, lists and deletes servers over Connect", async () => {
    const client = clientFor(VirtualMcpServerService, app.url, "connect");
    const name = fresh();
    const { virtualServer } = await client.createVirtualMcpServer({ virtualServer: { name, members: [{ client: "up", tools: ["*"] }] } });
    assert.equal(virtualServer?.members[0]?.prompts, true);
    const listed = await client.listVirtualMcpServers({});
    assert.ok(listed.virtualServers.some((server) => server.name === name));
    await client.deleteVirtualMcpServer({ name });
    assert.ok(!(await client.listVirtualMcpServers({})).virtualServers.some((server) => server.name === name));
  });
});

describe("one namespace for MCP clients and virtual servers", () => {
  test("refuses a virtual server named like an MCP client, with a 400 naming the name", async () => {
    const res = await api(app, "POST", PATH, body({ name: "up" }));
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^name: "up" is the name of an MCP client/);
  });

  test("refuses an MCP client named like a virtual server, with a 400 naming the name", async () => {
    const server = await create();
    const res = await api(app, "POST", "/api/mcp/client", { name: server.name, connection_type: "http", connection_string: upstream.httpUrl, tools_to_execute: ["*"] });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^name: .* is the name of a virtual MCP server/);
  });

  test("refuses renaming an MCP client to a virtual server's name, with a 400 naming the name", async () => {
    const server = await create();
    const clients = await api(app, "GET", "/api/mcp/clients");
    const other = clients.body.clients.find((client: Json) => client.name === "other");
    const res = await api(app, "PUT", `/api/mcp/client/${other.client_id}`, { name: server.name });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^name: .* is the name of a virtual MCP server/);
  });
});

/** Bodies the API refuses: what is wrong, the body, the start of the message (which names the field). */
const REFUSALS: [string, Json, RegExp][] = [
  ["a member naming an unknown client", { members: [{ client: "nosuch", tools: ["*"] }] }, /^members\[0\]\.client: names no MCP client: "nosuch" does not exist/],
  ["a member naming an unknown tool of its client", { members: [{ client: "up", tools: ["echo", "nosuch"] }] }, /^members\[0\]\.tools\[1\]: "nosuch" is not a tool of MCP client "up"/],
  ["the reserved name sse", { name: "sse" }, /^name: "sse" is reserved/],
  ["the reserved name messages", { name: "messages" }, /^name: "messages" is reserved/],
  ["a name with a hyphen", { name: "docs-team" }, /^name: must be 1-64 letters, digits or underscores/],
  ["a server without a name", { name: "" }, /^name: is required/],
  ["the same client twice", { members: [{ client: "up", tools: ["*"] }, { client: "up", tools: [] }] }, /^members\[1\]\.client: "up" is also members\[0\]/],
  ["an empty members list", { members: [] }, /^members: needs at least one member/],
  ["a member without a client", { members: [{ tools: ["*"] }] }, /^members\[0\]\.client: is required/],
  ["\"*\" beside named tools", { members: [{ client: "up", tools: ["*", "echo"] }] }, /^members\[0\]\.tools: "\*" means every tool/],
  ["a tool named twice", { members: [{ client: "up", tools: ["echo", "echo"] }] }, /^members\[0\]\.tools\[1\]: "echo" is listed twice/],
  ["an unknown field", { membres: [] }, /membres/],
];

describe("refused input", () => {
  for (const [what, patch, message] of REFUSALS) {
    test(`answers 400 naming the field for ${what}`, async () => {
      const res = await api(app, "POST", PATH, body(patch));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, message);
    });
  }

  test("answers 400 naming the field for an update that breaks a rule, and keeps the stored server", async () => {
    const created = await create();
    const res = await api(app, "PUT", `${PATH}/${created.name}`, { members: [] });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^members: needs at least one member/);
    assert.deepEqual((await api(app, "GET", `${PATH}/${created.name}`)).body.virtual_server, created);
  });
});
