/**
 * /mcp/<client>: one upstream server's whole protocol through the gateway, with the MCP SDK's client on
 * Streamable HTTP, for an http, an sse and a stdio upstream: initialize, tools, resources (with
 * subscriptions), prompts, completion, logging, ping, list changes, progress, cancellation, pagination,
 * and sampling, elicitation and roots answered by the client whose request caused them.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type ProgressNotification,
} from "@modelcontextprotocol/sdk/types.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { stdioClient } from "../helpers/mcp-specs.js";
import { closeRelay, connectRelay, eventually, remoteClient, textOf, waitHealthy, type RelayConnectOptions } from "../helpers/relay-client.js";
import { startRelayUpstream, TOOLS, UPSTREAM_INFO, UPSTREAM_INSTRUCTIONS, type RelayUpstreamListener, type UpstreamStats } from "../helpers/relay-upstream.js";

type ProgressParams = ProgressNotification["params"];

const STDIO_UPSTREAM = fileURLToPath(new URL("../helpers/relay-upstream-stdio.ts", import.meta.url));
/** Every tool but `secret` is in the clients' tools_to_execute. */
const CALLABLE = TOOLS.map((tool) => tool.name).filter((name) => name !== "secret");
const UPSTREAMS = [
  { kind: "http", client: "up_http" },
  { kind: "sse", client: "up_sse" },
  { kind: "stdio", client: "up_stdio" },
] as const;

let upstream: RelayUpstreamListener;
let app: TestApp;
let open: Client[] = [];

before(async () => {
  upstream = await startRelayUpstream();
  app = await startApp({
    mcpClients: [
      remoteClient("up_http", "http", upstream.httpUrl, CALLABLE),
      remoteClient("up_sse", "sse", upstream.sseUrl, CALLABLE),
      { ...stdioClient("up_stdio", process.execPath, ["--import", "tsx", STDIO_UPSTREAM]), toolsToExecute: CALLABLE },
    ],
  });
  await waitHealthy(app, UPSTREAMS.map((u) => u.client));
});

afterEach(async () => {
  await Promise.all(open.map((client) => closeRelay(client).catch(() => undefined)));
  open = [];
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

async function connect(name: string, options: RelayConnectOptions = {}): Promise<Client> {
  const client = await connectRelay(app, name, options);
  open.push(client);
  return client;
}

async function stats(client: Client): Promise<UpstreamStats> {
  return JSON.parse(textOf(await client.callTool({ name: "stats", arguments: {} }))) as UpstreamStats;
}

/**
 * A client that records every progress notification. Its own handler, rather than the SDK's onprogress:
 * the SDK drops progress that arrives in the same read as the response it belongs to.
 */
function progressOf(seen: ProgressParams[]): RelayConnectOptions {
  return { setup: (client) => client.setNotificationHandler(ProgressNotificationSchema, (n) => void seen.push(n.params)) };
}

/** A client that answers sampling with `answer`. */
function sampling(answer: string): RelayConnectOptions {
  return {
    capabilities: { sampling: {} },
    setup: (client) =>
      client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: "assistant", model: "test-model", content: { type: "text", text: answer } })),
  };
}

for (const { kind, client: name } of UPSTREAMS) {
  describe(`an ${kind} upstream through /mcp/${name}`, () => {
    test("initialize answers the upstream's capabilities, server info and instructions", async () => {
      const client = await connect(name);
      assert.deepEqual(client.getServerCapabilities(), {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        completions: {},
        logging: {},
      });
      assert.deepEqual(client.getServerVersion(), UPSTREAM_INFO);
      assert.equal(client.getInstructions(), UPSTREAM_INSTRUCTIONS);
    });

    test("tools/list passes the upstream's pages and cursors, without the tools the client does not let callers use", async () => {
      const client = await connect(name);
      const first = await client.listTools();
      assert.equal(first.nextCursor, "4");
      const names = first.tools.map((tool) => tool.name);
      for (let cursor: string | undefined = first.nextCursor; cursor !== undefined; ) {
        const page = await client.listTools({ cursor });
        names.push(...page.tools.map((tool) => tool.name));
        cursor = page.nextCursor;
      }
      assert.deepEqual(names, CALLABLE);
      const rich = first.tools.find((tool) => tool.name === "rich");
      assert.deepEqual(rich?._meta, { "test/tool-meta": "kept" });
      assert.deepEqual(rich?.annotations, { readOnlyHint: true, title: "Rich" });
      assert.deepEqual(rich?.outputSchema?.required, ["answer"]);
    });

    test("tools/call returns every content block, structuredContent, _meta and annotations as the upstream sent them", async () => {
      const client = await connect(name);
      const result = await client.callTool({ name: "rich", arguments: {} });
      assert.deepEqual(result.structuredContent, { answer: 42 });
      assert.deepEqual(result._meta, { "test/result-meta": "kept" });
      assert.deepEqual(
        (result.content as { type: string }[]).map((part) => part.type),
        ["text", "image", "audio", "resource", "resource_link"],
      );
      assert.deepEqual((result.content as { annotations?: unknown }[])[0]?.annotations, { audience: ["user"], priority: 0.5 });
    });

    test("a tool outside the client's tools_to_execute is not available", async () => {
      const client = await connect(name);
      const result = await client.callTool({ name: "secret", arguments: {} });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /tool "secret" is not available/);
    });

    test("an upstream's own JSON-RPC error reaches the client with its code and message", async () => {
      const client = await connect(name);
      await assert.rejects(client.readResource({ uri: "test://nowhere" }), (err: { code?: number; message?: string; data?: unknown }) => {
        assert.deepEqual([err.code, err.message, err.data], [-32002, "MCP error -32002: Resource not found: test://nowhere", { uri: "test://nowhere" }]);
        return true;
      });
    });

    test("resources/list and resources/templates/list pass with their cursors, _meta and annotations", async () => {
      const client = await connect(name);
      const first = await client.listResources();
      assert.equal(first.nextCursor, "r2");
      const second = await client.listResources({ cursor: first.nextCursor });
      assert.equal(second.nextCursor, undefined);
      assert.deepEqual([...first.resources, ...second.resources].map((r) => r.uri), ["test://static/hello", "test://static/pixel", "test://doc/readme"]);
      assert.deepEqual(first.resources[0]?._meta, { "test/resource-meta": 1 });
      assert.deepEqual(second.resources[0]?.annotations, { audience: ["user"], priority: 0.9 });
      const templates = await client.listResourceTemplates();
      assert.deepEqual(templates.resourceTemplates.map((t) => t.uriTemplate), ["test://doc/{name}"]);
    });

    test("resources/read returns text and blob contents", async () => {
      const client = await connect(name);
      const hello = await client.readResource({ uri: "test://static/hello" });
      assert.deepEqual(hello.contents, [{ uri: "test://static/hello", mimeType: "text/plain", text: "hello, world", _meta: { "test/content-meta": true } }]);
      const pixel = await client.readResource({ uri: "test://static/pixel" });
      assert.equal((pixel.contents[0] as { blob?: string }).blob?.startsWith("iVBOR"), true);
      const templated = await client.readResource({ uri: "test://doc/guide" });
      assert.equal((templated.contents[0] as { text?: string }).text, "# guide");
    });

    test("prompts/list and prompts/get pass through", async () => {
      const client = await connect(name);
      const prompts = await client.listPrompts();
      assert.deepEqual(prompts.prompts.map((p) => p.name), ["greet"]);
      const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
      assert.deepEqual(prompt.messages, [{ role: "user", content: { type: "text", text: "Hello, Ada!" } }]);
    });

    test("completion/complete passes through", async () => {
      const client = await connect(name);
      const result = await client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "name", value: "al" } });
      assert.deepEqual(result.completion.values, ["alice", "albert"]);
    });

    test("ping is answered", async () => {
      const client = await connect(name);
      assert.deepEqual(await client.ping(), {});
    });

    test("progress notifications reach the client under its own progress token, which the upstream never sees", async () => {
      const seen: ProgressParams[] = [];
      const client = await connect(name, progressOf(seen));
      const result = await client.callTool({ name: "progress", arguments: { steps: 3 }, _meta: { progressToken: "token-of-the-client" } });
      assert.doesNotMatch(textOf(result), /token-of-the-client/);
      assert.deepEqual(
        seen.map((p) => [p.progressToken, p.progress, p.total, p.message]),
        [
          ["token-of-the-client", 1, 3, "step 1"],
          ["token-of-the-client", 2, 3, "step 2"],
          ["token-of-the-client", 3, 3, "step 3"],
        ],
      );
    });

    test("a call the client cancels is cancelled upstream", async () => {
      const client = await connect(name);
      const before = (await stats(client)).cancelled;
      const controller = new AbortController();
      const call = client.callTool({ name: "wait", arguments: {} }, undefined, { signal: controller.signal });
      await eventually("the call waits upstream", async () => ((await stats(client)).waiting > 0 ? true : undefined));
      controller.abort("the test cancels");
      await assert.rejects(call);
      await eventually("the upstream saw the cancellation", async () => ((await stats(client)).cancelled > before ? true : undefined));
    });

    test("sampling is answered by the client of the session whose call asked for it", async () => {
      const first = await connect(name, sampling("answer of the first session"));
      const second = await connect(name, sampling("answer of the second session"));
      assert.equal(textOf(await first.callTool({ name: "sample", arguments: { prompt: "hi" } })), "answer of the first session");
      assert.equal(textOf(await second.callTool({ name: "sample", arguments: { prompt: "hi" } })), "answer of the second session");
    });

    test("an elicitation in form mode is answered by the client", async () => {
      let asked: unknown;
      const client = await connect(name, {
        capabilities: { elicitation: { form: {} } },
        setup: (c) =>
          c.setRequestHandler(ElicitRequestSchema, (request) => {
            asked = request.params;
            return { action: "accept", content: { color: "blue" } };
          }),
      });
      const result = await client.callTool({ name: "elicit_form", arguments: {} });
      assert.deepEqual(JSON.parse(textOf(result)), { action: "accept", content: { color: "blue" } });
      assert.equal((asked as { message?: string }).message, "Pick a colour");
    });

    test("an elicitation in URL mode is answered by the client", async () => {
      let asked: { mode?: string; url?: string } = {};
      const client = await connect(name, {
        capabilities: { elicitation: { url: {} } },
        setup: (c) =>
          c.setRequestHandler(ElicitRequestSchema, (request) => {
            asked = request.params as { mode?: string; url?: string };
            return { action: "decline" };
          }),
      });
      const result = await client.callTool({ name: "elicit_url", arguments: {} });
      assert.deepEqual(JSON.parse(textOf(result)), { action: "decline" });
      assert.deepEqual([asked.mode, asked.url], ["url", "https://example.test/consent"]);
    });

    test("roots/list is answered by the client", async () => {
      const client = await connect(name, {
        capabilities: { roots: {} },
        setup: (c) => c.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: "file:///work", name: "work" }] })),
      });
      const result = await client.callTool({ name: "roots", arguments: {} });
      assert.deepEqual(JSON.parse(textOf(result)), { roots: [{ uri: "file:///work", name: "work" }] });
    });

    test("a sampling request the client did not declare the capability for fails upstream with -32601, and the session goes on", async () => {
      const client = await connect(name);
      const result = await client.callTool({ name: "sample", arguments: { prompt: "hi" } });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /^sampling failed: sampling\/createMessage -32601 /);
      assert.equal(textOf(await client.callTool({ name: "echo", arguments: { text: "still here" } })), "still here");
    });

    test("the client gets log messages at the level it set and not below", async () => {
      const messages: unknown[] = [];
      const client = await connect(name, { setup: (c) => c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void messages.push(n.params.data)) });
      await client.setLoggingLevel("warning");
      await client.callTool({ name: "log", arguments: { level: "info", text: "too quiet" } });
      await client.callTool({ name: "log", arguments: { level: "error", text: "loud enough" } });
      assert.deepEqual(messages, ["loud enough"]);
    });

    test("resource updates reach only the session subscribed to the URI, and stop after unsubscribe", async () => {
      const updatesOf = (list: string[]): RelayConnectOptions => ({ setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void list.push(n.params.uri)) });
      const firstSeen: string[] = [];
      const secondSeen: string[] = [];
      const first = await connect(name, updatesOf(firstSeen));
      const second = await connect(name, updatesOf(secondSeen));
      const a = `test://doc/a-${kind}`;
      const b = `test://doc/b-${kind}`;
      await first.subscribeResource({ uri: a });
      await second.subscribeResource({ uri: b });
      await first.callTool({ name: "touch", arguments: { uri: a } });
      await eventually("the first session hears of a", () => (firstSeen.includes(a) ? true : undefined));
      await first.callTool({ name: "touch", arguments: { uri: b } });
      await eventually("the second session hears of b", () => (secondSeen.includes(b) ? true : undefined));
      assert.deepEqual([firstSeen, secondSeen], [[a], [b]]);
      await first.unsubscribeResource({ uri: a });
      await first.callTool({ name: "touch", arguments: { uri: a } });
      const marker = `test://doc/marker-${kind}`;
      await first.subscribeResource({ uri: marker });
      await first.callTool({ name: "touch", arguments: { uri: marker } });
      await eventually("the first session hears of the marker", () => (firstSeen.includes(marker) ? true : undefined));
      assert.deepEqual(firstSeen, [a, marker]);
    });

    test("tool, resource and prompt list changes reach the client", async () => {
      const seen = new Set<string>();
      const client = await connect(name, {
        setup: (c) => {
          c.setNotificationHandler(ToolListChangedNotificationSchema, () => void seen.add("tools"));
          c.setNotificationHandler(ResourceListChangedNotificationSchema, () => void seen.add("resources"));
          c.setNotificationHandler(PromptListChangedNotificationSchema, () => void seen.add("prompts"));
        },
      });
      await client.callTool({ name: "announce", arguments: {} });
      await eventually("every list change arrives", () => (seen.size === 3 ? true : undefined));
    });

    test("a client that goes away while it is asked for sampling leaves the upstream with an error, not waiting", async () => {
      let asked!: () => void;
      const askedOnce = new Promise<void>((resolve) => (asked = resolve));
      const leaving = await connectRelay(app, name, {
        capabilities: { sampling: {} },
        // Never answered: the client leaves instead.
        setup: (c) => c.setRequestHandler(CreateMessageRequestSchema, () => (asked(), new Promise<never>(() => undefined))),
      });
      const watcher = await connect(name);
      const before = (await stats(watcher)).failures.length;
      const call = leaving.callTool({ name: "sample", arguments: { prompt: "hi" } }).catch(() => undefined);
      await askedOnce;
      await leaving.close();
      await call;
      const failures = await eventually("the upstream's sampling request failed", async () => {
        const now = (await stats(watcher)).failures;
        return now.length > before ? now.slice(before) : undefined;
      });
      assert.match(failures[0] ?? "", /^sampling\/createMessage -3200[01]$/);
    });
  });
}

describe("the server-to-client request bound", () => {
  test("a session takes 16 pending server-to-client requests, and one more fails upstream at once with -32603", async () => {
    const answers: Array<() => void> = [];
    const client = await connect("up_http", {
      capabilities: { sampling: {} },
      setup: (c) =>
        c.setRequestHandler(
          CreateMessageRequestSchema,
          () => new Promise((resolve) => answers.push(() => resolve({ role: "assistant", model: "m", content: { type: "text", text: "ok" } }))),
        ),
    });
    // The test answers only once the upstream has seen its refusals, so the first 16 are all pending then.
    const result = await client.callTool({ name: "flood", arguments: { count: 20, refusals: 4 } }, undefined, {
      onprogress: () => {
        for (const answer of answers.splice(0)) answer();
      },
    });
    const outcome = JSON.parse(textOf(result)) as { ok: number; refused: string[] };
    assert.equal(outcome.ok, 16);
    assert.deepEqual(outcome.refused, Array(4).fill("sampling/createMessage -32603"));
  });
});

describe("client.mcp_relay_request_timeout", () => {
  async function setRelayTimeout(value: string): Promise<void> {
    const res = await api(app, "PATCH", "/config", { client: { mcp_relay_request_timeout: value } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }

  /** A client that declares sampling and never answers it. */
  function silent(asked: string[]): RelayConnectOptions {
    return {
      capabilities: { sampling: {} },
      setup: (c) => c.setRequestHandler(CreateMessageRequestSchema, (request) => (asked.push(request.method), new Promise<never>(() => undefined))),
    };
  }

  /** Calls `tool` and checks that the upstream's sampling request failed with -32001 once the 1s setting ran out. */
  async function assertTimesOut(client: Client, tool: string, asked: string[]): Promise<void> {
    const started = performance.now();
    const result = await client.callTool({ name: tool, arguments: { prompt: "anyone there?" } });
    const elapsed = performance.now() - started;
    assert.deepEqual(asked, ["sampling/createMessage"]);
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^sampling failed: sampling\/createMessage -32001 /);
    assert.ok(elapsed >= 990 && elapsed < 10_000, `the upstream got its error after ${Math.round(elapsed)} ms, not after about 1s`);
  }

  for (const { kind, client: name } of UPSTREAMS) {
    test(`a sampling request of an ${kind} upstream that the client never answers fails upstream after the timeout a PATCH set, in a session opened before it`, async () => {
      const asked: string[] = [];
      const client = await connect(name, silent(asked));
      await setRelayTimeout("1s");
      try {
        await assertTimesOut(client, "sample", asked);
      } finally {
        await setRelayTimeout("10m");
      }
    });
  }

  test("a virtual server with several members times out its members' server-to-client requests the same way", async () => {
    const created = await api(app, "POST", "/api/mcp/virtual-servers", { name: "timeout_duo", members: [{ client: "up_http", tools: ["sample"] }, { client: "up_sse", tools: ["sample"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await setRelayTimeout("1s");
    try {
      const asked: string[] = [];
      await assertTimesOut(await connect("timeout_duo", silent(asked)), "up_sse-sample", asked);
    } finally {
      await setRelayTimeout("10m");
      await api(app, "DELETE", "/api/mcp/virtual-servers/timeout_duo");
    }
  });
});

describe("the legacy SSE transport at /mcp/<client>/sse", () => {
  for (const { kind, client: name } of UPSTREAMS) {
    test(`relays initialize, tools/call, progress and sampling of an ${kind} upstream`, async () => {
      const seen: ProgressParams[] = [];
      const answering = sampling("sampled over sse");
      const client = await connect(name, {
        kind: "sse",
        capabilities: answering.capabilities ?? {},
        setup: (c) => {
          answering.setup?.(c);
          progressOf(seen).setup?.(c);
        },
      });
      assert.equal(client.getInstructions(), UPSTREAM_INSTRUCTIONS);
      assert.equal(textOf(await client.callTool({ name: "echo", arguments: { text: "over sse" } })), "over sse");
      await client.callTool({ name: "progress", arguments: { steps: 2 }, _meta: { progressToken: 7 } });
      assert.deepEqual(seen.map((p) => [p.progressToken, p.progress]), [[7, 1], [7, 2]]);
      assert.equal(textOf(await client.callTool({ name: "sample", arguments: { prompt: "hi" } })), "sampled over sse");
    });
  }
});
