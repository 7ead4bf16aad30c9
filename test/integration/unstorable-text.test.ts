/**
 * A NUL character (U+0000) in admin input, on the embedded database or the server GW_TEST_DATABASE_URL names:
 * PostgreSQL cannot store or look one up, so it is a 400 naming the value, never a 503 "database unavailable"
 * from a connection the statement broke.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(async () => {
  await app.stop();
});

describe("a NUL character in admin input", () => {
  test("in a REST path parameter is a 400 naming the parameter", async () => {
    const res = await api(app, "GET", "/api/governance/teams/team%00x");
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "invalid_request");
    assert.match(res.body.error.message, /path parameter "id": text contains a NUL character \(U\+0000\)/);
  });

  test("in a REST body field is a 400 naming the field", async () => {
    const res = await api(app, "POST", "/api/governance/teams", { name: "ops\u0000" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^team\.name: text contains a NUL character/);
  });

  test("sent over Connect, where no REST reading sees it, is refused before the database as invalid_argument", async () => {
    const client = clientFor(GovernanceService, app.url, "connect");
    const lookup = await client.getTeam({ id: "team\u0000x" }).catch((err: unknown) => err);
    assert.ok(lookup instanceof ConnectError, String(lookup));
    assert.equal(lookup.code, Code.InvalidArgument);
    assert.match(lookup.rawMessage, /contains a NUL character \(U\+0000\), which the database cannot store or look up/);
    const write = await client.createTeam({ team: { name: "ops\u0000" } }).catch((err: unknown) => err);
    assert.ok(write instanceof ConnectError, String(write));
    assert.equal(write.code, Code.InvalidArgument);
  });

  test("leaves the database serving: the next write is saved", async () => {
    const client = clientFor(GovernanceService, app.url, "connect");
    await client.getTeam({ id: "\u0000" }).catch(() => undefined);
    const created = await api(app, "POST", "/api/governance/teams", { name: "after-nul" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const listed = await api(app, "GET", "/api/governance/teams");
    assert.ok(listed.body.teams.some((team: { name: string }) => team.name === "after-nul"));
  });
});
