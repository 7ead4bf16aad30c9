import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { MAX_LOGIN_FAILURES } from "../../src/services/login-throttle.js";

const PASSWORD = "throttle-pw";
const auth = { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 };

describe("admin login throttling over REST", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp({ auth });
  });
  after(() => app.stop());

  test("failures up to the limit are 401, the next attempt is 429 with retry-after even with the right password", async () => {
    for (let i = 0; i < MAX_LOGIN_FAILURES; i++) {
      const res = await api(app, "POST", "/api/session/login", { username: "admin", password: `wrong-${i}` });
      assert.equal(res.status, 401);
    }
    const res = await fetch(`${app.url}/api/session/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password: PASSWORD }),
    });
    assert.equal(res.status, 429);
    const retryAfter = Number(res.headers.get("retry-after"));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `retry-after ${res.headers.get("retry-after")}`);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "too_many_login_attempts");
  });

  test("a client-sent peer address header does not escape the throttle", async () => {
    const res = await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD }, { "gw-peer-address": "203.0.113.9", "x-forwarded-for": "203.0.113.9" });
    assert.equal(res.status, 429);
  });
});

describe("admin login throttling over Connect", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp({ auth });
  });
  after(() => app.stop());

  test("after the limit of failures the RPC fails resource_exhausted with retry-after metadata", async () => {
    const client = clientFor(SessionService, app.url, "connect");
    for (let i = 0; i < MAX_LOGIN_FAILURES; i++) {
      await assert.rejects(client.login({ username: "admin", password: `wrong-${i}` }), (err: unknown) => {
        assert.ok(err instanceof ConnectError);
        assert.equal(err.code, Code.Unauthenticated);
        return true;
      });
    }
    await assert.rejects(client.login({ username: "admin", password: PASSWORD }, { headers: { "gw-peer-address": "198.51.100.1" } }), (err: unknown) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.ResourceExhausted);
      assert.match(err.metadata.get("retry-after") ?? "", /^\d+$/);
      return true;
    });
  });
});
