/**
 * Three gateway processes on one PostgreSQL schema: the node registry, configuration changes made on one
 * node served by the others, an admin logout in effect on every node within its documented bound, a cut
 * listen connection, a node with the wrong key, and a killed node. Skipped, saying why, when no PostgreSQL
 * server answers.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { MikroORM } from "@mikro-orm/postgresql";
import { parseDatabaseUrl } from "../../src/store/index.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api as rawApi } from "../helpers/app.js";
import { CLUSTER_DATABASE_URL, clusterSkipReason, eventually, inEffectWithin, newClusterPlace, spawnNode, startNodes, startSlowChange, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";
import { logLineCount, waitForLog } from "../helpers/gateway-process.js";
import { sdk } from "../helpers/inference.js";

const STDIO_FIXTURE = fileURLToPath(new URL("../fixtures/stdio-server.ts", import.meta.url));
/** A stdio server that starts only where the node's CLUSTER_MCP is "ok": reachable from some nodes only. */
const PICKY_SERVER = {
  name: "picky",
  connection_type: "stdio",
  stdio_config: { command: "sh", args: ["-c", `test "$CLUSTER_MCP" = ok && exec "${process.execPath}" --import tsx "${STDIO_FIXTURE}"`], envs: ["CLUSTER_MCP"] },
};

/** The config file every node starts with. Auth is on: a stdio client may only be created with an admin session. */
const CONFIG = { auth_config: { is_enabled: true, admin_username: "admin", admin_password: "cluster-secret" } };

/** How long after a logout answered another node may still accept its token: the documented bound. */
const LOGOUT_BOUND_MS = 1_000;

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster tests ${skip}`);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response JSON of any shape

describe("a cluster of three nodes on one PostgreSQL", { skip: skip ?? false }, () => {
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let token = "";
  let openai: MockUpstream;

  /** An admin API call with the session token signed in on the first node, whichever node it goes to. */
  const api = (at: ClusterNode, method: string, path: string, body?: unknown) => rawApi(at, method, path, body, { authorization: `Bearer ${token}` });

  const node = (i: number): ClusterNode => {
    const found = nodes[i];
    assert.ok(found, `node ${i} started`);
    return found;
  };

  async function liveNodes(at: ClusterNode): Promise<Json[]> {
    const res = await api(at, "GET", "/api/cluster/nodes");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.nodes as Json[];
  }

  async function createKey(at: ClusterNode, id: string): Promise<void> {
    const res = await api(at, "POST", "/api/governance/virtual-keys", {
      id,
      name: id,
      value: `sk-gw-${id}`,
      provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }

  /** Polls a node until the key serves a chat completion there. */
  async function servedOn(at: ClusterNode, id: string): Promise<void> {
    await eventually(`virtual key ${id} to serve on ${at.url}`, async () => {
      const done = await sdk(at, `sk-gw-${id}`).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: id }] });
      return done.choices[0]?.message.content === `echo: ${id}` ? true : undefined;
    });
  }

  /** Whether `session` opens the admin API on `at` (a 401 says no; any other refusal fails the test). */
  async function opens(at: ClusterNode, session: string): Promise<boolean> {
    const res = await rawApi(at, "GET", "/api/cluster/nodes", undefined, { authorization: `Bearer ${session}` });
    assert.ok(res.status === 200 || res.status === 401, JSON.stringify(res.body));
    return res.status === 200;
  }

  /** Signs in on `at` and uses the token on every node, so each node holds the session. */
  async function signInEverywhere(at: ClusterNode): Promise<string> {
    const login = await rawApi(at, "POST", "/api/session/login", { username: "admin", password: "cluster-secret" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const session = String(login.body.token);
    for (const each of nodes) assert.ok(await opens(each, session), `the new session opens the admin API on ${each.url}`);
    return session;
  }

  /** Logs `session` out on `at`; checks every node refuses it within the bound. */
  async function logOutEverywhere(at: ClusterNode, session: string): Promise<void> {
    const out = await rawApi(at, "POST", "/api/session/logout", undefined, { authorization: `Bearer ${session}` });
    assert.equal(out.status, 200, JSON.stringify(out.body));
    const loggedOutAt = Date.now();
    await Promise.all(nodes.map((each) => inEffectWithin(`the logout on ${each.url}`, loggedOutAt, LOGOUT_BOUND_MS, async () => !(await opens(each, session)))));
  }

  before(async () => {
    openai = await startMockOpenAi();
    // Auth on: a stdio client may only be created with an admin session, and the session must work on every node.
    place = await newClusterPlace(CONFIG);
    // The third node cannot start the picky MCP server; the first two can.
    nodes = await startNodes(place, 3, (i) => ({ CLUSTER_MCP: i < 2 ? "ok" : "broken" }));
    const login = await rawApi(node(0), "POST", "/api/session/login", { username: "admin", password: "cluster-secret" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    token = String(login.body.token);
    const provider = await api(node(0), "POST", "/api/v1/providers", { name: "openai", keys: [{ id: "oa", name: "oa", value: "sk-up", models: ["gpt-4o-mini"] }], network_config: { base_url: openai.url } });
    assert.equal(provider.status, 200, JSON.stringify(provider.body));
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await openai?.close();
  });

  test("lists every live node with its address, version and times on each node", async () => {
    for (const at of nodes) {
      const listed = await eventually("three live nodes", async () => {
        const live = await liveNodes(at);
        return live.length === 3 ? live : undefined;
      });
      assert.deepEqual(listed.map((n) => n["address"]).sort(), nodes.map((n) => n.url).sort());
      for (const entry of listed) {
        assert.equal(entry["version"], "0.1.0");
        assert.ok(Date.parse(String(entry["heartbeat_at"])) >= Date.parse(String(entry["started_at"])));
      }
    }
  });

  test("accepts on every node an admin session signed in on another, and refuses a made-up one", async () => {
    const login = await rawApi(node(2), "POST", "/api/session/login", { username: "admin", password: "cluster-secret" });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const onFirst = await rawApi(node(0), "GET", "/api/cluster/nodes", undefined, { authorization: `Bearer ${String(login.body.token)}` });
    assert.equal(onFirst.status, 200, JSON.stringify(onFirst.body));
    const madeUp = await rawApi(node(1), "GET", "/api/cluster/nodes", undefined, { authorization: "Bearer not-a-session" });
    assert.equal(madeUp.status, 401, JSON.stringify(madeUp.body));
  });

  test("refuses a session token on every node within a second of logout", async () => {
    const session = await signInEverywhere(node(0));
    await logOutEverywhere(node(1), session);
  });

  test("refuses a session token on every node within a second of logout while they apply a slow configuration change", async () => {
    const session = await signInEverywhere(node(0));
    const slow = await startSlowChange(node(2), nodes.length, { authorization: `Bearer ${token}` });
    try {
      await logOutEverywhere(node(1), session);
    } finally {
      await slow.release();
    }
  });

  test("serves on the third node a virtual key created through the first", async () => {
    await createKey(node(0), "made-on-a");
    await servedOn(node(2), "made-on-a");
  });

  test("refuses on the other nodes a virtual key deleted on one", async () => {
    await createKey(node(1), "short-lived");
    await servedOn(node(2), "short-lived");
    const deleted = await api(node(1), "DELETE", "/api/governance/virtual-keys/short-lived");
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await eventually("the deleted key to be refused on the third node", async () => {
      const res = await fetch(`${node(2).url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-gw-short-lived" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] }),
      });
      await res.text();
      return res.status === 401 ? true : undefined;
    });
  });

  /** The request limit of each team `at` holds in memory (what its limits are enforced with), by id. */
  async function teamLimits(at: ClusterNode): Promise<Map<string, unknown>> {
    const res = await api(at, "GET", "/api/governance/group-usage");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const levels = (res.body.levels ?? []) as Json[];
    return new Map(levels.filter((level) => level["level"] === "team").map((level) => [String(level["id"]), (level["requests"] as Json | undefined)?.["max_limit"]]));
  }

  test("holds on the other nodes a team created, changed and deleted on one, and leaves the others as they were", async () => {
    const limit = (max: number) => ({ rate_limit: { request_max_limit: max, request_reset_duration: "1h" } });
    for (const [id, max] of [["team-kept", 3], ["team-moving", 7]] as const) {
      const created = await api(node(0), "POST", "/api/governance/teams", { id, name: id, ...limit(max) });
      assert.equal(created.status, 200, JSON.stringify(created.body));
    }
    await eventually("both teams on the third node", async () => {
      const held = await teamLimits(node(2));
      return held.get("team-kept") === 3 && held.get("team-moving") === 7 ? true : undefined;
    });
    const changed = await api(node(1), "PUT", "/api/governance/teams/team-moving", limit(9));
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    await eventually("the changed limit on the third node", async () => ((await teamLimits(node(2))).get("team-moving") === 9 ? true : undefined));
    const deleted = await api(node(0), "DELETE", "/api/governance/teams/team-moving");
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await eventually("the deleted team gone from the third node", async () => ((await teamLimits(node(2))).has("team-moving") ? undefined : true));
    assert.equal((await teamLimits(node(2))).get("team-kept"), 3);
    assert.equal((await teamLimits(node(1))).has("team-moving"), false);
  });

  test("serves on the other nodes a virtual key one node read from its config file on SIGHUP", async () => {
    const fromFile = { id: "from-file", name: "from-file", value: "sk-gw-from-file", provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }] };
    await writeFile(place.configPath, JSON.stringify({ ...CONFIG, governance: { virtual_keys: [fromFile] } }));
    const seen = logLineCount(node(1).gw);
    node(1).gw.child.kill("SIGHUP");
    await waitForLog(node(1).gw, "config file reloaded", seen);
    await servedOn(node(0), "from-file");
    await servedOn(node(2), "from-file");
  });

  /** Terminates `target`'s listen connection on the server; it dials again after half a second. */
  async function terminateListen(target: ClusterNode): Promise<void> {
    const self = (await liveNodes(target)).find((entry) => entry["address"] === target.url);
    assert.ok(self, "the node lists itself");
    const orm = await MikroORM.init({ entities: [], discovery: { warnWhenNoEntities: false }, ...connectionOf(CLUSTER_DATABASE_URL), pool: { min: 0, max: 1 }, ensureDatabase: false, debug: false });
    try {
      const killed = await orm.em.getConnection().execute<Json[]>("select pg_terminate_backend(pid) as done from pg_stat_activity where application_name = ?", [`gw-listen:${self["id"]}`]);
      assert.equal(killed.length, 1, "exactly the node's listen connection was found");
    } finally {
      await orm.close(true);
    }
  }

  test("takes up changes again after its listen connection is terminated", async () => {
    const target = node(2);
    const logged = logLineCount(target.gw);
    await terminateListen(target);
    await waitForLog(target.gw, "listening for configuration changes again", logged);
    await createKey(node(0), "after-reconnect");
    await servedOn(target, "after-reconnect");
  });

  test("drops a team deleted while its listen connection was down", async () => {
    const target = node(2);
    const created = await api(node(0), "POST", "/api/governance/teams", { id: "team-gap", name: "team-gap" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await eventually("the team on the third node", async () => ((await teamLimits(target)).has("team-gap") ? true : undefined));
    const logged = logLineCount(target.gw);
    await terminateListen(target);
    // Within the half second before the node dials again: the deletion's notification never reaches it.
    const deleted = await api(node(0), "DELETE", "/api/governance/teams/team-gap");
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await waitForLog(target.gw, "listening for configuration changes again", logged);
    await eventually("the deleted team gone from the third node", async () => ((await teamLimits(target)).has("team-gap") ? undefined : true));
  });

  test("reports an MCP server reachable from two of three nodes as degraded, with each node's state", async () => {
    const created = await api(node(0), "POST", "/api/mcp/client", PICKY_SERVER);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String(created.body.client_id);
    const ids = new Map<string, string>((await liveNodes(node(0))).map((entry) => [String(entry["address"]), String(entry["id"])]));
    for (const at of [node(1), node(2)]) {
      const listed = await eventually(`node_states from three nodes on ${at.url}`, async () => {
        const res = await api(at, "GET", "/api/mcp/clients");
        const client = (res.body.clients as Json[]).find((c) => c["client_id"] === id);
        const states = client?.["node_states"] as Record<string, Json> | undefined;
        if (!client || !states || Object.keys(states).length !== 3) return undefined;
        const healthy = Object.values(states).filter((s) => s["state"] === "healthy").length;
        return healthy === 2 && client["state"] === "degraded" ? client : undefined;
      });
      const states = listed["node_states"] as Record<string, Json>;
      assert.equal(states[ids.get(node(0).url) ?? ""]?.["state"], "healthy");
      assert.equal(states[ids.get(node(0).url) ?? ""]?.["tools_count"], 3);
      assert.notEqual(states[ids.get(node(2).url) ?? ""]?.["state"], "healthy");
      assert.ok(states[ids.get(node(2).url) ?? ""]?.["last_failure"], "the failing node reports its last failure");
    }
  });

  test("refuses to start a node whose GW_ENCRYPTION_KEY differs, naming the variable", async () => {
    const stranger = await spawnNode(place, { GW_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64") });
    const code = await stranger.exited;
    assert.equal(code, 1);
    assert.match(stranger.output(), /GW_ENCRYPTION_KEY does not match/);
  });

  test("drops a node killed with SIGKILL from the list and keeps what it acknowledged", async () => {
    const victim = node(2);
    await createKey(victim, "made-on-victim");
    victim.gw.child.kill("SIGKILL");
    await victim.gw.exited;
    await eventually("the killed node to drop out of the list", async () => {
      const live = await liveNodes(node(0));
      return live.some((entry) => entry["address"] === victim.url) ? undefined : live;
    }, 90_000);
    const kept = await api(node(0), "GET", "/api/governance/virtual-keys/made-on-victim");
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    await servedOn(node(1), "made-on-victim");
  });
});

/** MikroORM connection options of a URL. */
function connectionOf(url: string): { host: string; port: number; user: string; dbName: string; password?: string } {
  const target = parseDatabaseUrl(url);
  return { host: target.host, port: target.port, user: target.user, dbName: target.dbName, ...(target.password === undefined ? {} : { password: target.password }) };
}
