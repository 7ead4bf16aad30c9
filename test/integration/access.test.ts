/**
 * Every RPC of every service in proto/, found in the generated descriptors (so a new RPC is covered without
 * touching this file), called over Connect on the real gateway with admin auth on, with each kind of
 * missing or dead credential: ACCESS_ADMIN RPCs are refused with 401, ACCESS_PUBLIC ones are never refused
 * for auth, and ACCESS_CALLER ones are never refused for want of an admin session (they judge the caller
 * themselves). Requests are empty, so an RPC that gets through has nothing to create or change.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { DescMethod, DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Access } from "../../gen/gw/api/v1/access_pb.js";
import { accessOf } from "../../src/services/access.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { transportFor } from "../helpers/clients.js";
import { generatedServices } from "../helpers/generated-services.js";

function isUnary(method: DescMethod): method is DescMethodUnary {
  return method.methodKind === "unary";
}

/** The error metadata that says which layer refused a call. */
function errorType(err: ConnectError): string | null {
  return err.metadata.get("gw-error-type");
}

/** Calls `method` with an empty request; resolves to the error it was refused with, or null when it succeeded. */
async function callEmpty(app: TestApp, method: DescMethodUnary, authorization: string | undefined): Promise<ConnectError | null> {
  const headers = authorization === undefined ? undefined : { authorization };
  try {
    await transportFor(app.url, "connect").unary(method, undefined, undefined, headers, {});
    return null;
  } catch (err) {
    assert.ok(err instanceof ConnectError, String(err));
    return err;
  }
}

const services = await generatedServices();
const methods: DescMethod[] = services.flatMap((s) => s.methods);
const PASSWORD = "access-test-pw";
const AUTH = { enabled: true, username: "admin", password: PASSWORD };

let app: TestApp;
/** A second gateway whose sessions expire a millisecond after login. */
let expiring: TestApp;
let loggedOutToken = "";
let expiredToken = "";

async function login(target: TestApp): Promise<string> {
  const res = await api(target, "POST", "/api/session/login", { username: "admin", password: PASSWORD });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.token as string;
}

before(async () => {
  app = await startApp({ auth: { ...AUTH, sessionTtlMs: 3_600_000 } });
  expiring = await startApp({ auth: { ...AUTH, sessionTtlMs: 1 } });
  loggedOutToken = await login(app);
  const out = await api(app, "POST", "/api/session/logout", undefined, { authorization: `Bearer ${loggedOutToken}` });
  assert.equal(out.status, 200);
  expiredToken = await login(expiring);
  // The session lived one millisecond; waiting a few more makes sure it is over.
  await sleep(10);
});

after(async () => {
  await app?.stop();
  await expiring?.stop();
});

/** The credentials a call may come with that carry no live admin session. */
const DEAD_CREDENTIALS: readonly { name: string; app: () => TestApp; authorization: () => string | undefined }[] = [
  { name: "no session", app: () => app, authorization: () => undefined },
  { name: "a garbage token", app: () => app, authorization: () => "Bearer not-a-session-token" },
  { name: "a logged-out token", app: () => app, authorization: () => `Bearer ${loggedOutToken}` },
  { name: "an expired token", app: () => expiring, authorization: () => `Bearer ${expiredToken}` },
];

describe("every RPC declares its access", () => {
  test("the generated descriptors hold the services of proto/", () => {
    assert.ok(services.some((s) => s.typeName === "gw.admin.v1.SessionService"), services.map((s) => s.typeName).join(", "));
  });

  test("every RPC is unary, so the walk below calls each one", () => {
    assert.deepEqual(methods.filter((m) => !isUnary(m)).map((m) => `${m.parent.typeName}/${m.name}`), []);
  });

  for (const method of methods) {
    test(`${method.parent.typeName}/${method.name} declares ADMIN, CALLER or PUBLIC`, () => {
      assert.notEqual(accessOf(method), undefined);
    });
  }
});

describe("access with admin auth on", () => {
  for (const method of methods) {
    const access = accessOf(method);
    if (access === undefined || !isUnary(method)) continue;
    const name = `${method.parent.typeName}/${method.name}`;
    if (access === Access.ADMIN) {
      test(`${name} (ADMIN) is not refused for auth with a live admin session`, async () => {
        const err = await callEmpty(app, method, `Bearer ${await login(app)}`);
        if (err === null) return;
        assert.notEqual(err.code, Code.Unauthenticated, String(err));
        assert.notEqual(err.code, Code.PermissionDenied, String(err));
      });
    }
    for (const credential of DEAD_CREDENTIALS) {
      if (access === Access.ADMIN) {
        test(`${name} (ADMIN) is refused with 401 for ${credential.name}`, async () => {
          const err = await callEmpty(credential.app(), method, credential.authorization());
          assert.ok(err, "the call succeeded");
          assert.equal(err.code, Code.Unauthenticated, String(err));
          assert.equal(errorType(err), "admin_session_required");
        });
      } else if (access === Access.PUBLIC) {
        test(`${name} (PUBLIC) is not refused for auth with ${credential.name}`, async () => {
          const err = await callEmpty(credential.app(), method, credential.authorization());
          if (err === null) return;
          assert.notEqual(err.code, Code.Unauthenticated, String(err));
          assert.notEqual(err.code, Code.PermissionDenied, String(err));
        });
      } else {
        test(`${name} (CALLER) judges the caller itself, never asking for an admin session, with ${credential.name}`, async () => {
          const err = await callEmpty(credential.app(), method, credential.authorization());
          if (err === null) return;
          assert.notEqual(errorType(err), "admin_session_required", String(err));
          assert.notEqual(errorType(err), "access_undeclared", String(err));
        });
      }
    }
  }
});
