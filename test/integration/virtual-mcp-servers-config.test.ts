/**
 * The config file's `mcp.virtual_servers`: entries in the API's JSON, checked at load with the entry's
 * path (against each other and the file's clients), seeded after the MCP clients their members name,
 * served at /mcp/<name>, and applied again by a config reload when the file's entry changed.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { appOptionsFromConfig, type AppOptions } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeRelay, connectRelay, waitHealthy } from "../helpers/relay-client.js";
import { startRelayUpstream, type RelayUpstreamListener } from "../helpers/relay-upstream.js";

type Json = Record<string, any /* JSON of any shape */>;

let upstream: RelayUpstreamListener;

before(async () => {
  upstream = await startRelayUpstream();
});

after(async () => {
  await upstream?.close();
});

/** The app options of a file with one client, "up", and these virtual servers. */
function optionsOf(virtualServers: Json[]): Partial<AppOptions> {
  const client = { name: "up", connection_type: "http", connection_string: upstream.httpUrl, tools_to_execute: ["*"] };
  return appOptionsFromConfig(parseConfig({ mcp: { client_configs: [client], virtual_servers: virtualServers } }, {}));
}

async function read(app: TestApp, name: string): Promise<Json> {
  const res = await api(app, "GET", `/api/mcp/virtual-servers/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const { created_at: _created, updated_at: _updated, ...server } = res.body.virtual_server;
  return server;
}

describe("loading the file", () => {
  test("refuses an unknown key of an entry, naming its path", () => {
    assert.throws(() => optionsOf([{ name: "docs", members: [{ client: "up", tool: ["*"] }] }]), /mcp\.virtual_servers\[0\]\.members\[0\]\.tool: /);
  });

  test("refuses an entry without a name", () => {
    assert.throws(() => optionsOf([{ members: [{ client: "up", tools: ["*"] }] }]), /mcp\.virtual_servers\[0\]\.name: is required/);
  });

  test("refuses an entry without members, naming its path", () => {
    assert.throws(() => optionsOf([{ name: "docs", members: [] }]), /mcp\.virtual_servers\[0\]\.members: needs at least one member/);
  });

  test("refuses a reserved name, naming its path", () => {
    assert.throws(() => optionsOf([{ name: "sse", members: [{ client: "up", tools: ["*"] }] }]), /mcp\.virtual_servers\[0\]\.name: "sse" is reserved/);
  });

  test("refuses two entries with one name", () => {
    const entry = { name: "docs", members: [{ client: "up", tools: ["*"] }] };
    assert.throws(() => optionsOf([entry, entry]), /mcp\.virtual_servers\[1\]\.name: "docs" is also the name of mcp\.virtual_servers\[0\]/);
  });

  test("refuses an entry named like one of the file's MCP clients", () => {
    assert.throws(() => optionsOf([{ name: "up", members: [{ client: "up", tools: ["*"] }] }]), /mcp\.virtual_servers\[0\]\.name: "up" is also the name of mcp\.client_configs\[0\]/);
  });
});

describe("starting with the file", () => {
  test("seeds its virtual servers with every default filled in and serves them", async () => {
    const app = await startApp(optionsOf([{ name: "docs", description: "from the file", members: [{ client: "up", tools: ["echo"] }] }]));
    try {
      assert.deepEqual(await read(app, "docs"), { name: "docs", description: "from the file", members: [{ client: "up", tools: ["echo"], resources: true, prompts: true }] });
      await waitHealthy(app, ["up"]);
      const client = await connectRelay(app, "docs");
      try {
        assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name), ["echo"]);
      } finally {
        await closeRelay(client);
      }
    } finally {
      await app.stop();
    }
  });

  test("refuses to start when a member names no MCP client, naming its path", async () => {
    await assert.rejects(startApp(optionsOf([{ name: "docs", members: [{ client: "nosuch", tools: ["*"] }] }])), /mcp\.virtual_servers\[0\]\.members\[0\]\.client: names no MCP client/);
  });
});

describe("reloading the file", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp(optionsOf([{ name: "docs", members: [{ client: "up", tools: ["echo"] }] }]));
  });

  after(async () => {
    await app?.stop();
  });

  test("applies a changed entry and a new one", async () => {
    await app.reload(optionsOf([{ name: "docs", description: "changed", members: [{ client: "up", tools: ["echo", "rich"] }] }, { name: "more", members: [{ client: "up", tools: [] }] }]));
    assert.deepEqual(await read(app, "docs"), { name: "docs", description: "changed", members: [{ client: "up", tools: ["echo", "rich"], resources: true, prompts: true }] });
    assert.equal((await read(app, "more")).name, "more");
    await waitHealthy(app, ["up"]);
    const client = await connectRelay(app, "docs");
    try {
      assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name), ["echo", "rich"]);
    } finally {
      await closeRelay(client);
    }
  });
});
