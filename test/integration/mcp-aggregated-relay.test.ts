/**
 * The aggregated /mcp beyond tools, with the MCP SDK's client against the real gateway: every client's
 * prompts named `<client>-<prompt>`, resources and resource templates under their own URIs (a URI two
 * clients list shown once, for the first by name) marked with `_meta["gw/client"]`, reads, subscriptions
 * and completions routed to the client that has them, and the log level set at every client; http and
 * stdio clients, as far as the caller's virtual key and include headers allow.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { closeRelay, connectMcpAt, eventually, textOf, waitHealthy, type RelayConnectOptions } from "../helpers/relay-client.js";
import { firstText, OpenClients, startRelayUpstreams, type RelayUpstreams } from "../helpers/relay-fixture.js";

/** Lets its caller use the client `up` only. */
const UP_ONLY = "sk-gw-aggregated-up";

let upstreams: RelayUpstreams;
let app: TestApp;
const open = new OpenClients();

before(async () => {
  upstreams = await startRelayUpstreams();
  app = await startApp({
    client: { ...DEFAULT_CLIENT },
    inference: inferenceOptionsFromFile({}, [{ id: "vk-up", name: "up-only", value: UP_ONLY, mcp_configs: [{ mcp_client_name: "up", tools_to_execute: ["*"] }] }]),
    mcpClients: upstreams.specs(),
  });
  await waitHealthy(app, ["up", "conf", "up_stdio"]);
});

afterEach(() => open.closeAll());

after(async () => {
  await app?.stop();
  await upstreams?.close();
});

async function connect(options: RelayConnectOptions = {}): Promise<Client> {
  return open.track(await connectMcpAt(app, "/mcp", options));
}

/** The count of gw_mcp_client_operation_duration_seconds samples for one client and method. */
async function operations(client: string, method: string): Promise<number> {
  const metrics = await (await fetch(`${app.url}/metrics`)).text();
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith("gw_mcp_client_operation_duration_seconds_count{") && l.includes(`mcp_client="${client}"`) && l.includes(`mcp_method="${method}"`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("announces prompts, resources, completion and logging beside its tools", async () => {
  const client = await connect();
  const capabilities = client.getServerCapabilities() ?? {};
  assert.ok(capabilities.tools && capabilities.prompts && capabilities.completions && capabilities.logging, JSON.stringify(capabilities));
  assert.deepEqual(capabilities.resources, { subscribe: true, listChanged: true });
});

test("a session that uses only tools opens no upstream session of its own", async () => {
  const before = upstreams.up.httpSessions;
  const client = await connect();
  assert.equal(textOf(await client.callTool({ name: "up-echo", arguments: { text: "tools only" } })), "tools only");
  assert.equal(upstreams.up.httpSessions, before);
  await client.listPrompts();
  assert.equal(upstreams.up.httpSessions, before + 1);
  await closeRelay(client);
  await eventually("the upstream session is closed", () => (upstreams.up.httpSessions === before ? true : undefined));
});

test("lists every client's prompts prefixed with its name and gets each from its client", async () => {
  const client = await connect();
  const names = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  assert.deepEqual(names, ["conf-test_simple_prompt", "conf-test_prompt_with_arguments", "conf-test_prompt_with_embedded_resource", "conf-test_prompt_with_image", "up-greet", "up_stdio-greet"]);
  const greeting = await client.getPrompt({ name: "up_stdio-greet", arguments: { name: "Ada" } });
  assert.deepEqual(greeting.messages[0]?.content, { type: "text", text: "Hello, Ada!" });
  const simple = await client.getPrompt({ name: "conf-test_simple_prompt" });
  assert.deepEqual(simple.messages[0]?.content, { type: "text", text: "This is a simple prompt for testing." });
});

test("refuses a prompt under its unprefixed name", async () => {
  const client = await connect();
  await assert.rejects(client.getPrompt({ name: "greet", arguments: { name: "x" } }), (err: { code?: number }) => err.code === -32602);
});

test("lists a resource URI two clients share once, for the first client by name, each resource marked with its client", async () => {
  const client = await connect();
  const resources = (await client.listResources()).resources.map((resource) => [resource.uri, resource._meta?.["gw/client"]]);
  assert.deepEqual(resources, [
    ["test://static-text", "conf"],
    ["test://static-binary", "conf"],
    ["test://watched-resource", "conf"],
    ["test://static/hello", "up"],
    ["test://static/pixel", "up"],
    ["test://doc/readme", "up"],
  ]);
});

test("reads each resource from the client that lists it, unchanged", async () => {
  const client = await connect();
  await client.listResources();
  const hello = await client.readResource({ uri: "test://static/hello" });
  assert.deepEqual(hello.contents, [{ uri: "test://static/hello", mimeType: "text/plain", text: "hello, world", _meta: { "test/content-meta": true } }]);
  assert.equal(firstText(await client.readResource({ uri: "test://static-text" })), "This is the content of the static text resource.");
});

test("reads a resource of a client's template without listing first", async () => {
  const client = await connect();
  const read = await client.readResource({ uri: "test://template/42/data" });
  assert.equal(JSON.parse(String(firstText(read))).id, "42");
});

test("lists every client's resource templates", async () => {
  const client = await connect();
  const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => [template.uriTemplate, template._meta?.["gw/client"]]);
  assert.deepEqual(templates, [
    ["test://template/{id}/data", "conf"],
    ["test://doc/{name}", "up"],
    ["test://doc/{name}", "up_stdio"],
  ]);
});

test("answers -32002 for a resource no client lists", async () => {
  const client = await connect();
  await assert.rejects(client.readResource({ uri: "test://nowhere" }), (err: { code?: number }) => err.code === -32002);
});

test("completes a prompt argument at the prompt's client", async () => {
  const client = await connect();
  const completed = await client.complete({ ref: { type: "ref/prompt", name: "up-greet" }, argument: { name: "name", value: "al" } });
  assert.deepEqual(completed.completion.values, ["alice", "albert"]);
});

test("sets the log level at every client that logs", async () => {
  const before = await Promise.all(["up", "conf", "up_stdio"].map((name) => operations(name, "logging/setLevel")));
  const client = await connect();
  await client.setLoggingLevel("debug");
  const now = await Promise.all(["up", "conf", "up_stdio"].map((name) => operations(name, "logging/setLevel")));
  assert.deepEqual(
    now.map((count, index) => count - (before[index] ?? 0)),
    [1, 1, 1],
  );
});

test("tells a subscriber when a resource it subscribed to changes", async () => {
  const updates: string[] = [];
  const client = await connect({
    setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updates.push(notification.params.uri)),
  });
  await client.listResources();
  await client.subscribeResource({ uri: "test://static/hello" });
  await client.callTool({ name: "up-touch", arguments: { uri: "test://static/hello" } });
  await eventually("the update", () => (updates.includes("test://static/hello") ? true : undefined));
});

test("shows only the prompts and resources of the clients the caller's virtual key allows", async () => {
  const client = await connect({ headers: { "x-gw-vk": UP_ONLY } });
  assert.deepEqual(
    (await client.listPrompts()).prompts.map((prompt) => prompt.name),
    ["up-greet"],
  );
  const owners = (await client.listResources()).resources.map((resource) => resource._meta?.["gw/client"]);
  assert.ok(owners.length > 0 && owners.every((owner) => owner === "up"), JSON.stringify(owners));
  await assert.rejects(client.getPrompt({ name: "conf-test_simple_prompt" }), (err: { code?: number }) => err.code === -32602);
});

test("follows the include headers", async () => {
  const client = await connect({ headers: { "x-gw-mcp-include-clients": "conf" } });
  const names = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  assert.ok(names.length > 0 && names.every((name) => name.startsWith("conf-")), JSON.stringify(names));
});

test("serves prompts and resources over the legacy SSE transport", async () => {
  const client = await connect({ kind: "sse" });
  assert.ok((await client.listPrompts()).prompts.some((prompt) => prompt.name === "up-greet"));
  assert.equal(firstText(await client.readResource({ uri: "test://doc/intro" })), "# intro");
});
