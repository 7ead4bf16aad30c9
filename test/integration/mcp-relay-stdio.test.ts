/**
 * /mcp/<client> sessions sharing one stdio process: a server-to-client request goes to the one session
 * waiting on the process and fails with -32603 when it is not one session's, log levels and
 * subscriptions stay each session's own.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { closeMcp, connectMcp, resultText } from "../helpers/mcp-client.js";
import { stdioClient } from "../helpers/mcp-specs.js";
import { closeRelay, connectRelay, eventually, textOf, waitHealthy, type RelayConnectOptions } from "../helpers/relay-client.js";
import type { UpstreamStats } from "../helpers/relay-upstream.js";

const STDIO_UPSTREAM = fileURLToPath(new URL("../helpers/relay-upstream-stdio.ts", import.meta.url));

let app: TestApp;
let open: Client[] = [];

before(async () => {
  app = await startApp({ mcpClients: [stdioClient("shared", process.execPath, ["--import", "tsx", STDIO_UPSTREAM])] });
  await waitHealthy(app, ["shared"]);
});

afterEach(async () => {
  await Promise.all(open.map((client) => closeRelay(client).catch(() => undefined)));
  open = [];
});

after(async () => {
  await app?.stop();
});

async function connect(options: RelayConnectOptions = {}): Promise<Client> {
  const client = await connectRelay(app, "shared", options);
  open.push(client);
  return client;
}

async function stats(client: Client): Promise<UpstreamStats> {
  return JSON.parse(textOf(await client.callTool({ name: "stats", arguments: {} }))) as UpstreamStats;
}

const answersSampling: RelayConnectOptions = {
  capabilities: { sampling: {} },
  setup: (client) => client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: "assistant", model: "m", content: { type: "text", text: "sampled" } })),
};

test("a server-to-client request while two sessions wait on the process is no one's: it fails upstream with -32603", async () => {
  const waiter = await connect();
  const asker = await connect(answersSampling);
  const controller = new AbortController();
  const waiting = waiter.callTool({ name: "wait", arguments: {} }, undefined, { signal: controller.signal }).catch(() => undefined);
  try {
    await eventually("the first session waits on the process", async () => ((await stats(asker)).waiting > 0 ? true : undefined));
    const result = await asker.callTool({ name: "sample", arguments: { prompt: "hi" } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^sampling failed: sampling\/createMessage -32603 /);
  } finally {
    controller.abort();
    await waiting;
  }
  assert.equal(textOf(await asker.callTool({ name: "sample", arguments: { prompt: "hi" } })), "sampled");
});

test("a server-to-client request during a call of the gateway's own (through /mcp) fails upstream with -32603", async () => {
  const relayed = await connect(answersSampling);
  const aggregated = await connectMcp(app, "streamable", {}, { sampling: {} });
  try {
    const result = await aggregated.callTool({ name: "shared-sample", arguments: { prompt: "hi" } });
    assert.match(resultText(result), /^sampling failed: sampling\/createMessage -32603 /);
  } finally {
    await closeMcp(aggregated);
  }
  assert.equal(textOf(await relayed.callTool({ name: "sample", arguments: { prompt: "hi" } })), "sampled");
});

test("each session gets log messages at its own level, whatever level another session set", async () => {
  const heard = (list: unknown[]): RelayConnectOptions => ({ setup: (c) => c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void list.push(n.params.data)) });
  const verboseSeen: unknown[] = [];
  const quietSeen: unknown[] = [];
  const unsetSeen: unknown[] = [];
  const verbose = await connect(heard(verboseSeen));
  const quiet = await connect(heard(quietSeen));
  const unset = await connect(heard(unsetSeen));
  await verbose.setLoggingLevel("debug");
  await quiet.setLoggingLevel("warning");
  for (const [client, level] of [
    [verbose, "debug"],
    [quiet, "info"],
    [quiet, "error"],
    [unset, "debug"],
    [unset, "info"],
  ] as const) {
    await client.callTool({ name: "log", arguments: { level, text: level } });
  }
  assert.deepEqual([verboseSeen, quietSeen, unsetSeen], [["debug"], ["error"], ["info"]]);
});

test("two sessions subscribed to one URI both hear of it, and one unsubscribing leaves the other subscribed", async () => {
  const updatesOf = (list: string[]): RelayConnectOptions => ({ setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void list.push(n.params.uri)) });
  const firstSeen: string[] = [];
  const secondSeen: string[] = [];
  const first = await connect(updatesOf(firstSeen));
  const second = await connect(updatesOf(secondSeen));
  const uri = "test://doc/shared";
  await first.subscribeResource({ uri });
  await second.subscribeResource({ uri });
  await first.callTool({ name: "touch", arguments: { uri } });
  await eventually("both sessions hear of it", () => (firstSeen.length === 1 && secondSeen.length === 1 ? true : undefined));
  await second.unsubscribeResource({ uri });
  await first.callTool({ name: "touch", arguments: { uri } });
  await eventually("the first session hears of it again", () => (firstSeen.length === 2 ? true : undefined));
  const marker = "test://doc/marker";
  await second.subscribeResource({ uri: marker });
  await first.callTool({ name: "touch", arguments: { uri: marker } });
  await eventually("the second session hears of the marker", () => (secondSeen.includes(marker) ? true : undefined));
  assert.deepEqual(secondSeen, [uri, marker]);
});
