/**
 * SSO browser login across three gateway processes on one PostgreSQL schema, walked with plain HTTP: a
 * login started on one node finishes its callback on another, its session cookie opens the admin API on
 * the third, a login state is spent on every node at once, and a logout on one node ends the session on
 * all within the documented bound, also while they apply a slow configuration change. Skipped, saying why,
 * when no PostgreSQL server answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { clusterSkipReason, eventually, inEffectWithin, newClusterPlace, startNodes, startSlowChange, stopCluster, type ClusterNode, type ClusterPlace } from "../helpers/cluster.js";
import { signInAtProvider } from "../helpers/sso-session.js";

/** How long after a logout answered another node may still accept its session: the documented bound. */
const LOGOUT_BOUND_MS = 1_000;

const skip = await clusterSkipReason();
if (skip) console.log(`# cluster SSO tests ${skip}`);

describe("SSO login on a cluster of three nodes", { skip: skip ?? false }, () => {
  let idp: IdpFixture;
  let place: ClusterPlace;
  let nodes: ClusterNode[] = [];
  let cookie = "";
  let spentCallback: URL | undefined;

  const node = (i: number): ClusterNode => {
    const found = nodes[i];
    assert.ok(found, `node ${i} started`);
    return found;
  };

  /** The status of an admin API call on `at` with the session cookie `value`. */
  const adminStatus = async (at: ClusterNode, value: string) => {
    const res = await fetch(`${at.url}/api/cluster/nodes`, { headers: { cookie: `gw_session=${value}` } });
    await res.text();
    return res.status;
  };

  /** Signs in through the first node and waits until the session opens the admin API on every node. */
  async function signInEverywhere(): Promise<string> {
    const begin = await fetch(`${node(0).url}/api/sso/login?return_to=/workspace/`, { redirect: "manual" });
    assert.equal(begin.status, 302);
    const callback = await signInAtProvider(begin.headers.get("location") ?? "", "root");
    const finished = await fetch(callback, { redirect: "manual" });
    assert.equal(finished.status, 302, await finished.text());
    const value = /gw_session=([^;]+)/.exec(finished.headers.get("set-cookie") ?? "")?.[1] ?? "";
    assert.notEqual(value, "", "the first node set the session cookie");
    for (const at of nodes) await eventually(`the session on ${at.url}`, async () => ((await adminStatus(at, value)) === 200 ? true : undefined));
    return value;
  }

  /** Logs the session `value` out through `at`; checks every node refuses it within the bound. */
  async function logOutEverywhere(at: ClusterNode, value: string): Promise<void> {
    const out = await fetch(`${at.url}/api/sso/logout`, { method: "POST", headers: { cookie: `gw_session=${value}` } });
    assert.equal(out.status, 200, await out.text());
    const loggedOutAt = Date.now();
    await Promise.all(nodes.map((each) => inEffectWithin(`the logout on ${each.url}`, loggedOutAt, LOGOUT_BOUND_MS, async () => (await adminStatus(each, value)) === 401)));
  }

  before(async () => {
    idp = await startIdpFixture({
      accounts: { root: { sub: "root", email: "root@example.com" } },
    });
    place = await newClusterPlace({
      auth_config: { is_enabled: true, admin_username: "admin", admin_password: "cluster-secret" },
      sso: { issuer: idp.issuer, client_id: GATEWAY_CLIENT_ID, client_secret: GATEWAY_CLIENT_SECRET, admin_emails: ["root@example.com"] },
    });
    nodes = await startNodes(place, 3);
  });

  after(async () => {
    if (place) await stopCluster(place, nodes);
    await idp?.close();
  });

  test("a login started on one node finishes on another and its session opens the admin API on the third", async () => {
    const begin = await fetch(`${node(0).url}/api/sso/login?return_to=/workspace/`, { redirect: "manual" });
    assert.equal(begin.status, 302);
    const callback = await signInAtProvider(begin.headers.get("location") ?? "", "root");
    assert.equal(callback.origin, node(0).url, "the provider returns to the node the login started on");
    const elsewhere = new URL(`${callback.pathname}${callback.search}`, node(1).url);
    const finished = await fetch(elsewhere, { redirect: "manual" });
    assert.equal(finished.status, 302, await finished.text());
    assert.equal(finished.headers.get("location"), "/workspace/");
    cookie = /gw_session=([^;]+)/.exec(finished.headers.get("set-cookie") ?? "")?.[1] ?? "";
    assert.notEqual(cookie, "", "the second node set the session cookie");
    spentCallback = callback;
    await eventually("the session to open the admin API on the third node", async () => ((await adminStatus(node(2), cookie)) === 200 ? true : undefined));
    assert.equal(await adminStatus(node(2), "not-a-session"), 401);
  });

  test("a login state spent on one node is refused on another", async () => {
    assert.ok(spentCallback, "the login above finished");
    const replayed = await fetch(new URL(`${spentCallback.pathname}${spentCallback.search}`, node(2).url), { redirect: "manual" });
    assert.equal(replayed.status, 400);
    assert.equal(((await replayed.json()) as { error: { type: string } }).error.type, "sso_state_invalid");
  });

  test("refuses an SSO session on every node within a second of logout", async () => {
    assert.notEqual(cookie, "");
    for (const at of nodes) await eventually(`the session on ${at.url}`, async () => ((await adminStatus(at, cookie)) === 200 ? true : undefined));
    await logOutEverywhere(node(2), cookie);
  });

  test("refuses an SSO session on every node within a second of logout while they apply a slow configuration change", async () => {
    const value = await signInEverywhere();
    const login = await fetch(`${node(1).url}/api/session/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ username: "admin", password: "cluster-secret" }) });
    assert.equal(login.status, 200);
    const { token } = (await login.json()) as { token: string };
    const slow = await startSlowChange(node(2), nodes.length, { authorization: `Bearer ${token}` });
    try {
      await logOutEverywhere(node(1), value);
    } finally {
      await slow.release();
    }
  });
});
