/**
 * Editing what you read, through the real app: a PUT of exactly what GET returned changes nothing for
 * every entity with an update; a PUT naming a nested message replaces it; Connect updates follow the same
 * mask rule; a hanging upstream is bounded by a timeout set through the API and through the config file.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { create } from "@bufbuild/protobuf";
import { ProviderService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { parseConfig } from "../../src/config/load-config.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

let upstream: MockUpstream;
let fixture: McpFixture;
let app: TestApp;

before(async () => {
  upstream = await startMockOpenAi();
  fixture = await startMcpFixture();
  app = await startApp();
});

after(async () => {
  await app?.stop();
  await fixture?.close();
  await upstream?.close();
});

/** A GET's body without the timestamps a write moves. */
function stable(body: Record<string, unknown>): Record<string, unknown> {
  const { updated_at: _updated, ...rest } = body;
  return rest;
}

async function ok(method: string, path: string, body?: unknown): Promise<any /* JSON of any shape */> {
  const res = await api(app, method, path, body);
  assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

describe("a PUT of what GET returned changes nothing", () => {
  test("for a provider, with its key values redacted", async () => {
    await ok("POST", "/api/v1/providers", {
      name: "openai",
      keys: [{ id: "k1", name: "main", value: "sk-upstream-1", models: ["gpt-4o-mini"], aliases: { fast: "gpt-4o-mini" }, weight: 2 }],
      network_config: { base_url: upstream.url, default_request_timeout_in_seconds: 30 },
    });
    const read = (await ok("GET", "/api/v1/providers/openai")).provider;
    await ok("PUT", "/api/v1/providers/openai", read);
    assert.deepEqual((await ok("GET", "/api/v1/providers/openai")).provider, read);
    const chat = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
    assert.equal(chat.status, 200, "the redacted key value sent back kept the stored one");
    assert.equal(upstream.last().headers["authorization"], "Bearer sk-upstream-1");
  });

  test("for a virtual key, with its value redacted and its timestamps sent back", async () => {
    const created = await ok("POST", "/api/governance/virtual-keys", {
      name: "team-rmw",
      provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1, budgets: [{ max_limit: 5, reset_duration: "1d" }] }],
      mcp_configs: [],
    });
    const id = created.virtual_key.id as string;
    const read = (await ok("GET", `/api/governance/virtual-keys/${id}`)).virtual_key;
    await ok("PUT", `/api/governance/virtual-keys/${id}`, read);
    assert.deepEqual(stable((await ok("GET", `/api/governance/virtual-keys/${id}`)).virtual_key), stable(read));
    const chat = await api(app, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, {
      authorization: `Bearer ${created.virtual_key.value as string}`,
    });
    assert.equal(chat.status, 200, `the key's value was kept: ${JSON.stringify(chat.body)}`);
  });

  test("for a virtual key without mcp_configs, which stays without them, and one with [] which stays []", async () => {
    for (const [name, extra] of [["rmw-unset", {}], ["rmw-empty", { mcp_configs: [] }]] as const) {
      const created = await ok("POST", "/api/governance/virtual-keys", { name, ...extra });
      const id = created.virtual_key.id as string;
      const read = (await ok("GET", `/api/governance/virtual-keys/${id}`)).virtual_key;
      assert.deepEqual(read.mcp_configs, "mcp_configs" in extra ? [] : undefined, name);
      await ok("PUT", `/api/governance/virtual-keys/${id}`, read);
      assert.deepEqual(stable((await ok("GET", `/api/governance/virtual-keys/${id}`)).virtual_key), stable(read), name);
    }
  });

  test("a PUT of mcp_configs: null removes a key's list, and [] sets an empty one", async () => {
    const created = await ok("POST", "/api/governance/virtual-keys", { name: "rmw-null", mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["*"] }] });
    const path = `/api/governance/virtual-keys/${created.virtual_key.id as string}`;
    await ok("PUT", path, { mcp_configs: null });
    assert.equal("mcp_configs" in (await ok("GET", path)).virtual_key, false);
    await ok("PUT", path, { mcp_configs: [] });
    assert.deepEqual((await ok("GET", path)).virtual_key.mcp_configs, []);
  });

  test("for an MCP client, with its headers redacted and its state, tools and ids sent back", async () => {
    const created = await ok("POST", "/api/mcp/client", {
      name: "rmw",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "headers",
      headers: { Authorization: { value: "Bearer upstream-secret" } },
      tools_to_execute: ["*"],
      needs_session_stickiness: true,
    });
    const id = created.client_id as string;
    const read = (await ok("GET", `/api/mcp/client/${id}`)).client;
    assert.equal(read.headers.Authorization.value, "<redacted>");
    assert.ok(read.tools.length > 0 && read.state === "healthy", JSON.stringify(read));
    await ok("PUT", `/api/mcp/client/${id}`, read);
    assert.deepEqual(stable((await ok("GET", `/api/mcp/client/${id}`)).client), stable(read));
    await ok("POST", `/api/mcp/client/${id}/reconnect`);
    assert.equal(fixture.seenHeaders.at(-1)?.["authorization"], "Bearer upstream-secret", "the stored header value was kept");
  });

  test("for the tool manager settings", async () => {
    const read = (await ok("GET", "/api/settings/mcp/tool-manager-config")).config;
    await ok("PUT", "/api/settings/mcp/tool-manager-config", read);
    assert.deepEqual((await ok("GET", "/api/settings/mcp/tool-manager-config")).config, read);
  });

  test("for the gateway configuration", async () => {
    const read = (await ok("GET", "/config")).config;
    await ok("PATCH", "/config", read);
    assert.deepEqual((await ok("GET", "/config")).config, read);
  });
});

describe("a PUT naming a nested message", () => {
  test("replaces network_config whole", async () => {
    await ok("PUT", "/api/v1/providers/openai", { network_config: { base_url: upstream.url, default_request_timeout_in_seconds: 7 } });
    assert.deepEqual((await ok("GET", "/api/v1/providers/openai")).provider.network_config, {
      base_url: upstream.url,
      default_request_timeout_in_seconds: 7,
      max_retries: 0,
      stream_idle_timeout_in_seconds: 0,
      max_response_bytes: 0,
    });
    await ok("PUT", "/api/v1/providers/openai", { network_config: { base_url: upstream.url } });
    assert.equal((await ok("GET", "/api/v1/providers/openai")).provider.network_config.default_request_timeout_in_seconds, 0);
  });

  test("names an unknown field inside it by its full path", async () => {
    const res = await api(app, "PUT", "/api/v1/providers/openai", { network_config: { base_uri: "http://127.0.0.1:1" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /network_config\.base_uri/);
  });

  test("accepts an immutable stdio_config sent back unchanged and refuses a changed one", async () => {
    const list = (await ok("GET", "/api/mcp/clients")).clients as { client_id: string; name: string }[];
    const id = list.find((c) => c.name === "rmw")?.client_id ?? "";
    const changed = await api(app, "PUT", `/api/mcp/client/${id}`, { stdio_config: { command: "node" } });
    assert.equal(changed.status, 400);
    assert.match(changed.body.error.message, /^stdio_config: is immutable/);
    await ok("PUT", `/api/mcp/client/${id}`, { connection_string: fixture.httpUrl, tools_to_execute: ["*"] });
  });
});

describe("Connect updates with an explicit update_mask", () => {
  test("a dotted path changes one field of a nested message and keeps the rest", async () => {
    const client = clientFor(ProviderService, app.url, "connect");
    await ok("PUT", "/api/v1/providers/openai", { network_config: { base_url: upstream.url, default_request_timeout_in_seconds: 9 } });
    const res = await client.updateProvider({
      name: "openai",
      provider: { networkConfig: { defaultRequestTimeoutInSeconds: 11 } },
      updateMask: create(FieldMaskSchema, { paths: ["network_config.default_request_timeout_in_seconds"] }),
    });
    assert.equal(res.provider?.networkConfig?.baseUrl, upstream.url);
    assert.equal(res.provider?.networkConfig?.defaultRequestTimeoutInSeconds, 11);
  });

  test("a path naming the nested message replaces it", async () => {
    const client = clientFor(ProviderService, app.url, "connect");
    const res = await client.updateProvider({
      name: "openai",
      provider: { networkConfig: { baseUrl: upstream.url } },
      updateMask: create(FieldMaskSchema, { paths: ["network_config"] }),
    });
    assert.equal(res.provider?.networkConfig?.defaultRequestTimeoutInSeconds, 0);
  });

  test("a virtual key's mcp_configs keep unset and [] apart", async () => {
    const client = clientFor(GovernanceService, app.url, "connect");
    const unset = await client.createVirtualKey({ virtualKey: { name: "connect-unset" } });
    const empty = await client.createVirtualKey({ virtualKey: { name: "connect-empty", mcpConfigs: { values: [] } } });
    assert.equal((await client.getVirtualKey({ id: unset.virtualKey?.id ?? "" })).virtualKey?.mcpConfigs, undefined);
    assert.deepEqual((await client.getVirtualKey({ id: empty.virtualKey?.id ?? "" })).virtualKey?.mcpConfigs?.values, []);
    const res = await client.updateVirtualKey({ id: empty.virtualKey?.id ?? "", virtualKey: {}, updateMask: create(FieldMaskSchema, { paths: ["mcp_configs"] }) });
    assert.equal(res.virtualKey?.mcpConfigs, undefined);
  });

  test("an unknown path is refused with its name", async () => {
    const client = clientFor(ProviderService, app.url, "connect");
    await assert.rejects(
      client.updateProvider({ name: "openai", provider: {}, updateMask: create(FieldMaskSchema, { paths: ["network_config.base_uri"] }) }),
      /update_mask: "network_config\.base_uri" is not a field of network_config/,
    );
  });
});

describe("a hanging upstream is bounded by the provider's timeout", () => {
  const chatOnce = (target: TestApp) =>
    api(target, "POST", "/v1/chat/completions", { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });

  test("set through the API", async () => {
    await ok("PUT", "/api/v1/providers/openai", { network_config: { base_url: upstream.url, default_request_timeout_in_seconds: 1 } });
    upstream.latencyMs = 60_000;
    try {
      const res = await chatOnce(app);
      assert.equal(res.status, 504, JSON.stringify(res.body));
    } finally {
      upstream.latencyMs = 0;
    }
  });

  test("set through the config file", async () => {
    const file = parseConfig(
      {
        providers: {
          openai: { keys: [{ id: "k1", name: "main", value: "sk-1" }], network_config: { base_url: upstream.url, default_request_timeout_in_seconds: 1 } },
        },
      },
      {},
    );
    const fromFile = await startApp({ inference: inferenceOptionsFromFile(file.providers, file.governance.virtualKeys) });
    upstream.latencyMs = 60_000;
    try {
      const res = await chatOnce(fromFile);
      assert.equal(res.status, 504, JSON.stringify(res.body));
    } finally {
      upstream.latencyMs = 0;
      await fromFile.stop();
    }
  });
});
