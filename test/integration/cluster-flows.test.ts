/**
 * Per-user flows across three gateway processes on one PostgreSQL schema: a header submission flow opened
 * by a tool call on one node is finished through another node's page and API and the call then succeeds
 * on the third; a per-user OAuth consent opened on one node completes its callback on another; a
 * credential revoked on one node is refused on the others. Skipped, saying why, when no PostgreSQL server
 * answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { api as rawApi } from "../helpers/app.js";
import { clusterSkipReason, eventually, newClusterPlace, startNodes, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";

const ALICE = "sk-gw-alice-cluster";
const BOB = "sk-gw-bob-cluster";
const ALICE_TOKEN = "alice-upstream-secret";
const ADMIN_SAMPLE = "admin-sample-secret";

/** Auth on, so an anonymous submission must bring the link's temp token; temp tokens on for virtual-key flows. */
const CONFIG = {
  auth_config: { is_enabled: true, admin_username: "admin", admin_password: "cluster-secret" },
  client: { mcp_enable_temp_token_auth: true },
};

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster flow tests ${skip}`);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response JSON of any shape

describe("per-user flows on a cluster of three nodes", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let token = "";
  let crm: McpFixture;
  let oauth: OauthFixture;

  const node = (i: number): ClusterNode => {
    const found = nodes[i];
    assert.ok(found, `node ${i} started`);
    return found;
  };

  /** An admin API call with the session signed in on the first node. */
  const admin = (at: ClusterNode, method: string, path: string, body?: unknown) => rawApi(at, method, path, body, { authorization: `Bearer ${token}` });

  /** Calls a tool through `at` as the virtual key `vk`. */
  const execute = (at: ClusterNode, vk: string, name: string, args: Json = {}) =>
    rawApi(at, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name, arguments: JSON.stringify(args) } }, { "x-gw-vk": vk });

  /** Polls `at` until a call as `vk` gets the answer `accept` picks out. */
  const callUntil = (at: ClusterNode, vk: string, name: string, what: string, accept: (res: { status: number; body: Json }) => boolean) =>
    eventually(`${what} on ${at.url}`, async () => {
      const res = await execute(at, vk, name, { text: "hi" });
      return accept(res) ? res : undefined;
    });

  before(async () => {
    crm = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: [ADMIN_SAMPLE, ALICE_TOKEN] } });
    oauth = await startOauthFixture();
    place = await newClusterPlace(CONFIG);
    nodes = await startNodes(place, 3);
    const login = await rawApi(node(0), "POST", "/api/session/login", { username: "admin", password: "cluster-secret" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    token = String(login.body.token);
    const created = await admin(node(0), "POST", "/api/mcp/client", {
      name: "crm",
      connection_type: "http",
      connection_string: crm.httpUrl,
      auth_type: "per_user_headers",
      per_user_header_keys: ["x-user-token"],
      user_headers: { "x-user-token": ADMIN_SAMPLE },
      tools_to_execute: ["*"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    for (const [id, value] of [["vk-alice", ALICE], ["vk-bob", BOB]] as const) {
      const key = await admin(node(0), "POST", "/api/governance/virtual-keys", { id, name: id, value, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }, { mcp_client_name: "files", tools_to_execute: ["*"] }] });
      assert.equal(key.status, 200, JSON.stringify(key.body));
    }
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await crm?.close();
    await oauth?.close();
  });

  test("a header flow opened by a call on the first node is finished through the second node and the call succeeds on the third", async () => {
    for (const at of nodes) await callUntil(at, ALICE, "crm-echo", "the per-user client and key", (res) => res.body?.error?.type === "mcp_auth_required");
    const needed = await execute(node(0), ALICE, "crm-echo", { text: "hi" });
    assert.equal(needed.status, 401, JSON.stringify(needed.body));
    const link = new URL(String(needed.body.mcp_auth_required.submit_url));
    assert.equal(link.origin, node(0).url, "the link names the node the call came in by");
    const flowId = link.searchParams.get("flow") ?? "";
    const tempToken = new URLSearchParams(link.hash.slice(1)).get("t") ?? "";
    assert.ok(flowId !== "" && tempToken !== "", "the link carries a flow id and a temp token");

    const page = await fetch(`${node(1).url}${link.pathname}${link.search}`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /crm/);
    const shown = await rawApi(node(1), "GET", `/api/mcp/per-user-headers/flows/${flowId}`);
    assert.equal(shown.status, 200, JSON.stringify(shown.body));
    assert.equal(shown.body.status, "pending");
    assert.equal(shown.body.identity.name, "vk-alice");
    const submitted = await rawApi(node(1), "PUT", `/api/mcp/per-user-headers/flows/${flowId}`, { headers: { "x-user-token": ALICE_TOKEN } }, { "x-gw-temp-token": tempToken });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    assert.equal(submitted.body.status, "success");

    const done = await callUntil(node(2), ALICE, "crm-echo", "the submitted credential to serve", (res) => res.status === 200);
    assert.equal(crm.seenHeaders.at(-1)?.["x-user-token"], ALICE_TOKEN, "the third node sent the value submitted through the second");
    assert.equal(done.body.role, "tool");
  });

  test("a finished flow is refused on every node", async () => {
    const needed = await execute(node(0), BOB, "crm-echo");
    const link = new URL(String(needed.body.mcp_auth_required.submit_url));
    const flowId = link.searchParams.get("flow") ?? "";
    const tempToken = new URLSearchParams(link.hash.slice(1)).get("t") ?? "";
    const wrong = await rawApi(node(1), "PUT", `/api/mcp/per-user-headers/flows/${flowId}`, { headers: { "x-user-token": "not-bobs" } }, { "x-gw-temp-token": tempToken });
    assert.equal(wrong.status, 422, JSON.stringify(wrong.body));
    // The failed verify spent the link's token on the second node: the third refuses it too.
    const replayed = await rawApi(node(2), "PUT", `/api/mcp/per-user-headers/flows/${flowId}`, { headers: { "x-user-token": "not-bobs" } }, { "x-gw-temp-token": tempToken });
    assert.equal(replayed.status, 401, JSON.stringify(replayed.body));
    assert.equal(replayed.body.error.type, "temp_token_invalid");
  });

  test("a credential revoked on the first node is refused on the second", async () => {
    await callUntil(node(1), ALICE, "crm-echo", "alice's credential", (res) => res.status === 200);
    const sessions = await admin(node(0), "GET", "/api/mcp/sessions");
    assert.equal(sessions.status, 200, JSON.stringify(sessions.body));
    const alice = (sessions.body.sessions as Json[]).find((s) => s["mcp_client_name"] === "crm" && s["identity"] === "vk-alice");
    assert.ok(alice, JSON.stringify(sessions.body));
    const revoked = await admin(node(0), "DELETE", `/api/mcp/sessions/${String(alice["credential_id"])}`);
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    const refused = await callUntil(node(1), ALICE, "crm-echo", "the revoked credential to be refused", (res) => res.status === 401);
    assert.equal(refused.body.error.type, "mcp_auth_required");
  });

  test("a per-user OAuth consent opened on one node completes its callback on another and serves on the third", async () => {
    // Created through the second node, so the redirect URI the authorization server returns to is the second node's.
    const created = await admin(node(1), "POST", "/api/mcp/client", { name: "files", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "per_user_oauth", tools_to_execute: ["*"] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal((await oauth.approve(String(created.body.authorize_url), undefined, "admin")).status, 302);
    const completed = await admin(node(1), "POST", String(created.body.complete_url));
    assert.equal(completed.status, 200, JSON.stringify(completed.body));

    const needed = await callUntil(node(0), BOB, "files-whoami", "the per_user_oauth client", (res) => res.body?.mcp_auth_required?.kind === "oauth");
    const payload = needed.body.mcp_auth_required as Json;
    assert.equal(new URL(String(payload["submit_url"])).origin, node(0).url);
    assert.equal(new URL(String(payload["authorize_url"])).searchParams.get("redirect_uri"), `${node(1).url}/api/oauth/callback`);
    const callback = await oauth.approve(String(payload["authorize_url"]), undefined, "bob-account");
    assert.equal(callback.status, 302, "the second node took the callback of a flow the first opened");
    assert.equal(callback.headers.get("location"), `/workspace/mcp-sessions/auth?flow=${String(payload["session_id"])}&kind=oauth`);

    const done = await callUntil(node(2), BOB, "files-whoami", "bob's token to serve", (res) => res.status === 200);
    assert.equal(done.body.content, "subject bob-account");
    const shown = await rawApi(node(0), "GET", `/api/mcp/per-user-headers/flows/${String(payload["session_id"])}`);
    assert.equal(shown.body.status, "completed", JSON.stringify(shown.body));
  });
});
