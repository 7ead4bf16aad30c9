/**
 * Virtual MCP servers at /mcp/<name> with the MCP SDK's client against the real gateway: one member
 * serves its client's surface under its own names, narrowed to the member's tools (and without its
 * resources or prompts when the member turns them off); several members serve theirs prefixed
 * `<client>-`, resources under their own URIs, each request going to the member it names. What a caller
 * sees is also what its virtual key and include headers allow, and a name no one may use is 404.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { connectRelay, eventually, textOf, waitHealthy, type RelayConnectOptions } from "../helpers/relay-client.js";
import { firstText, OpenClients, startRelayUpstreams, type RelayUpstreams } from "../helpers/relay-fixture.js";
import { TOOLS, UPSTREAM_INFO } from "../helpers/relay-upstream.js";

/** Lets its caller use up's echo only, and nothing of conf. */
const ECHO_ONLY = "sk-gw-virtual-echo";
/** Names neither client. */
const NEITHER = "sk-gw-virtual-neither";

let upstreams: RelayUpstreams;
let app: TestApp;
const open = new OpenClients();

before(async () => {
  upstreams = await startRelayUpstreams();
  app = await startApp({
    client: { ...DEFAULT_CLIENT },
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-echo", name: "echo-only", value: ECHO_ONLY, mcp_configs: [{ mcp_client_name: "up", tools_to_execute: ["echo"] }] },
      { id: "vk-neither", name: "neither", value: NEITHER, mcp_configs: [{ mcp_client_name: "elsewhere", tools_to_execute: ["*"] }] },
    ]),
    mcpClients: upstreams.specs(TOOLS.map((tool) => tool.name).filter((name) => name !== "secret")),
  });
  await waitHealthy(app, ["up", "conf", "up_stdio"]);
  for (const server of [
    { name: "solo", description: "echo and friends", members: [{ client: "up", tools: ["echo", "rich", "stats"] }] },
    { name: "solo_bare", members: [{ client: "up", tools: ["echo"], resources: false, prompts: false }] },
    { name: "duo", description: "two servers in one", members: [{ client: "up", tools: ["echo", "log"] }, { client: "conf", tools: ["test_simple_text", "test_image_content"] }] },
    { name: "mixed", members: [{ client: "up_stdio", tools: ["echo"] }, { client: "conf", tools: ["test_simple_text"] }] },
    { name: "duo_no_prompts", members: [{ client: "up", tools: ["echo"], prompts: false }, { client: "conf", tools: [], prompts: false }] },
  ]) {
    const created = await api(app, "POST", "/api/mcp/virtual-servers", server);
    assert.equal(created.status, 200, JSON.stringify(created.body));
  }
});

afterEach(() => open.closeAll());

after(async () => {
  await app?.stop();
  await upstreams?.close();
});

async function connect(name: string, options: RelayConnectOptions = {}): Promise<Client> {
  return open.track(await connectRelay(app, name, options));
}

async function toolNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
    if (cursor === undefined) return names;
  }
}

/** A raw initialize POST. */
function initialize(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
}

describe("a virtual server with one member", () => {
  test("answers initialize with its client's server info", async () => {
    const client = await connect("solo");
    assert.deepEqual(client.getServerVersion(), UPSTREAM_INFO);
  });

  test("lists only the member's tools, under their own names", async () => {
    const client = await connect("solo");
    assert.deepEqual(await toolNames(client), ["echo", "rich", "stats"]);
  });

  test("calls a tool of the member under its own name", async () => {
    const client = await connect("solo");
    assert.equal(textOf(await client.callTool({ name: "echo", arguments: { text: "solo hello" } })), "solo hello");
  });

  test("refuses a tool of the client that the member does not offer", async () => {
    const client = await connect("solo");
    const result = await client.callTool({ name: "progress", arguments: { steps: 1 } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /tool "progress" is not available/);
  });

  test("reads the client's resources", async () => {
    const client = await connect("solo");
    const read = await client.readResource({ uri: "test://static/hello" });
    assert.deepEqual(read.contents, [{ uri: "test://static/hello", mimeType: "text/plain", text: "hello, world", _meta: { "test/content-meta": true } }]);
  });

  test("gets the client's prompts under their own names", async () => {
    const client = await connect("solo");
    assert.deepEqual((await client.listPrompts()).prompts.map((prompt) => prompt.name), ["greet"]);
    const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
    assert.deepEqual(prompt.messages, [{ role: "user", content: { type: "text", text: "Hello, Ada!" } }]);
  });

  test("leaves out the resources and prompts a member turns off", async () => {
    const client = await connect("solo_bare");
    const capabilities = client.getServerCapabilities() ?? {};
    assert.equal(capabilities.resources, undefined);
    assert.equal(capabilities.prompts, undefined);
    await assert.rejects(client.listResources(), (err: { code?: number }) => err.code === -32601);
    await assert.rejects(client.getPrompt({ name: "greet", arguments: { name: "Ada" } }), (err: { code?: number }) => err.code === -32601);
  });

  test("narrows its member's tools further to what the caller's virtual key allows", async () => {
    const client = await connect("solo", { headers: { "x-gw-vk": ECHO_ONLY } });
    assert.deepEqual(await toolNames(client), ["echo"]);
    const refused = await client.callTool({ name: "rich", arguments: {} });
    assert.equal(refused.isError, true);
  });

  test("takes an edit of its member's tools up in an open session", async () => {
    const created = await api(app, "POST", "/api/mcp/virtual-servers", { name: "solo_edited", members: [{ client: "up", tools: ["echo", "rich"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const client = await connect("solo_edited");
    assert.deepEqual(await toolNames(client), ["echo", "rich"]);
    const updated = await api(app, "PUT", "/api/mcp/virtual-servers/solo_edited", { members: [{ client: "up", tools: ["rich"] }] });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(await toolNames(client), ["rich"]);
  });
});

describe("telling open sessions what changed", () => {
  /** A client that counts the list_changed notifications it gets, by method. */
  async function counting(name: string, options: RelayConnectOptions = {}): Promise<{ client: Client; seen: string[] }> {
    const seen: string[] = [];
    const client = await connect(name, {
      ...options,
      setup: (c) => {
        c.fallbackNotificationHandler = async (notification) => void seen.push(notification.method);
      },
    });
    // The GET stream carries notifications no request is waiting for; a request makes sure it is up.
    await client.ping();
    return { client, seen };
  }

  test("a session on a virtual server is told its tools, prompts and resources changed when the server is edited", async () => {
    const created = await api(app, "POST", "/api/mcp/virtual-servers", { name: "told_of_edits", members: [{ client: "up", tools: ["echo"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { seen } = await counting("told_of_edits");
    const updated = await api(app, "PUT", "/api/mcp/virtual-servers/told_of_edits", { members: [{ client: "up", tools: ["echo", "rich"] }] });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    await eventually("the three list changes", () =>
      ["notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"].every((method) => seen.includes(method)) ? true : undefined,
    );
  });

  test("a session on a client is told tools/list_changed when its caller's virtual key changes", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "told-of-key-edits", mcp_configs: [{ mcp_client_name: "up", tools_to_execute: ["echo"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key = created.body.virtual_key as { id: string; value: string };
    const { client, seen } = await counting("up", { headers: { "x-gw-vk": key.value } });
    assert.deepEqual(await toolNames(client), ["echo"]);
    const updated = await api(app, "PUT", `/api/governance/virtual-keys/${key.id}`, { mcp_configs: [{ mcp_client_name: "up", tools_to_execute: ["echo", "rich"] }] });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    await eventually("the tool list change", () => (seen.includes("notifications/tools/list_changed") ? true : undefined));
    assert.deepEqual(await toolNames(client), ["echo", "rich"]);
  });
});

describe("a virtual server with several members", () => {
  test("answers initialize with its own name and every member's capabilities", async () => {
    const client = await connect("duo");
    assert.equal(client.getServerVersion()?.name, "duo");
    const capabilities = client.getServerCapabilities() ?? {};
    assert.ok(capabilities.tools && capabilities.resources && capabilities.prompts && capabilities.completions && capabilities.logging, JSON.stringify(capabilities));
    assert.match(client.getInstructions() ?? "", /^two servers in one/);
  });

  test("lists every member's offered tools prefixed with its client's name", async () => {
    const client = await connect("duo");
    assert.deepEqual(await toolNames(client), ["conf-test_simple_text", "conf-test_image_content", "up-echo", "up-log"]);
  });

  test("calls each member's tool by its prefixed name", async () => {
    const client = await connect("duo");
    assert.equal(textOf(await client.callTool({ name: "up-echo", arguments: { text: "duo hello" } })), "duo hello");
    assert.equal(textOf(await client.callTool({ name: "conf-test_simple_text", arguments: {} })), "This is a simple text response for testing.");
  });

  test("refuses a tool under its unprefixed name", async () => {
    const client = await connect("duo");
    const result = await client.callTool({ name: "echo", arguments: { text: "x" } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /tool "echo" is not available/);
  });

  test("lists every member's resources under their own URIs, each marked with its client", async () => {
    const client = await connect("duo");
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

  test("reads each resource from the member that lists it", async () => {
    const client = await connect("duo");
    await client.listResources();
    assert.equal(firstText(await client.readResource({ uri: "test://static/hello" })), "hello, world");
    assert.equal(firstText(await client.readResource({ uri: "test://static-text" })), "This is the content of the static text resource.");
  });

  test("reads a resource of a member's template without listing first", async () => {
    const client = await connect("duo");
    const read = await client.readResource({ uri: "test://template/42/data" });
    assert.equal(JSON.parse(String(firstText(read))).id, "42");
  });

  test("lists every member's resource templates", async () => {
    const client = await connect("duo");
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate);
    assert.deepEqual(templates, ["test://template/{id}/data", "test://doc/{name}"]);
  });

  test("answers -32002 for a resource no member lists", async () => {
    const client = await connect("duo");
    await assert.rejects(client.readResource({ uri: "test://nowhere" }), (err: { code?: number }) => err.code === -32002);
  });

  test("lists every member's prompts prefixed and gets each from its member", async () => {
    const client = await connect("duo");
    const names = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
    assert.deepEqual(names, ["conf-test_simple_prompt", "conf-test_prompt_with_arguments", "conf-test_prompt_with_embedded_resource", "conf-test_prompt_with_image", "up-greet"]);
    const greeting = await client.getPrompt({ name: "up-greet", arguments: { name: "Grace" } });
    assert.deepEqual(greeting.messages[0]?.content, { type: "text", text: "Hello, Grace!" });
    const simple = await client.getPrompt({ name: "conf-test_simple_prompt" });
    assert.deepEqual(simple.messages[0]?.content, { type: "text", text: "This is a simple prompt for testing." });
  });

  test("completes a prompt argument at the prompt's member", async () => {
    const client = await connect("duo");
    const completed = await client.complete({ ref: { type: "ref/prompt", name: "up-greet" }, argument: { name: "name", value: "al" } });
    assert.deepEqual(completed.completion.values, ["alice", "albert"]);
  });

  test("leaves out the prompts its members turn off", async () => {
    const client = await connect("duo_no_prompts");
    assert.equal(client.getServerCapabilities()?.prompts, undefined);
    assert.deepEqual(await toolNames(client), ["up-echo"]);
    await assert.rejects(client.getPrompt({ name: "up-greet", arguments: { name: "x" } }), (err: { code?: number }) => err.code === -32602);
  });

  test("serves a member whose client is a stdio process through its shared process", async () => {
    const client = await connect("mixed");
    assert.deepEqual(await toolNames(client), ["conf-test_simple_text", "up_stdio-echo"]);
    assert.equal(textOf(await client.callTool({ name: "up_stdio-echo", arguments: { text: "over stdio" } })), "over stdio");
  });

  test("serves the legacy SSE transport", async () => {
    const client = await connect("duo", { kind: "sse" });
    assert.deepEqual(await toolNames(client), ["conf-test_simple_text", "conf-test_image_content", "up-echo", "up-log"]);
    assert.equal(textOf(await client.callTool({ name: "up-echo", arguments: { text: "over sse" } })), "over sse");
  });

  test("relays a member's log messages to the client", async () => {
    const messages: unknown[] = [];
    const client = await connect("duo", {
      setup: (c) => {
        c.fallbackNotificationHandler = async (notification) => void messages.push(notification);
      },
    });
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "up-log", arguments: { level: "info", text: "from up" } });
    await eventually("the log message", () => (messages.some((n) => JSON.stringify(n).includes("from up")) ? true : undefined));
  });

  test("shows only the members and tools the caller's virtual key allows", async () => {
    const client = await connect("duo", { headers: { "x-gw-vk": ECHO_ONLY } });
    assert.deepEqual(await toolNames(client), ["up-echo"]);
    const resources = (await client.listResources()).resources.map((resource) => resource._meta?.["gw/client"]);
    assert.ok(resources.length > 0 && resources.every((owner) => owner === "up"), JSON.stringify(resources));
    const refused = await client.callTool({ name: "conf-test_simple_text", arguments: {} });
    assert.equal(refused.isError, true);
  });

  test("follows the include headers", async () => {
    const client = await connect("duo", { headers: { "x-gw-mcp-include-tools": "conf-test_simple_text,up-log" } });
    assert.deepEqual(await toolNames(client), ["conf-test_simple_text", "up-log"]);
  });
});

describe("names that serve nothing", () => {
  test("an unknown name is 404", async () => {
    const res = await initialize("/mcp/no_such_server");
    assert.equal(res.status, 404);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /no MCP server at \/mcp\/no_such_server/);
  });

  test("a virtual server none of whose members the caller's virtual key names is 404, as an unknown name", async () => {
    const forbidden = await initialize("/mcp/duo", { "x-gw-vk": NEITHER });
    const unknown = await initialize("/mcp/nosuch", { "x-gw-vk": NEITHER });
    assert.equal(forbidden.status, 404);
    assert.equal((await forbidden.text()).replaceAll("duo", "X"), (await unknown.text()).replaceAll("nosuch", "X"));
  });

  test("a deleted virtual server is 404", async () => {
    const created = await api(app, "POST", "/api/mcp/virtual-servers", { name: "short_lived", members: [{ client: "up", tools: ["*"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal((await initialize("/mcp/short_lived")).status, 200);
    assert.equal((await api(app, "DELETE", "/api/mcp/virtual-servers/short_lived")).status, 200);
    assert.equal((await initialize("/mcp/short_lived")).status, 404);
  });
});
