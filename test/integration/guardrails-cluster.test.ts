/**
 * Two gateways on one PostgreSQL schema: a guardrail written through one reaches the other's in-memory
 * snapshot (that guardrail alone re-read), and so does its deletion. Needs a PostgreSQL server (the embedded database serves one node).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { randomSchemaName } from "../../src/store/index.js";
import { eventually } from "../helpers/cluster.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";

describe("guardrails on two nodes", { skip: testDatabaseUrl ? false : "needs a PostgreSQL server: set GW_TEST_DATABASE_URL" }, () => {
  let writer: TestApp;
  let reader: TestApp;

  before(async () => {
    const shared = { schema: randomSchemaName(), encryptionKey: randomBytes(32).toString("base64") };
    writer = await startApp(shared);
    reader = await startApp(shared);
  });

  after(async () => {
    // The schema is shared: only the last node to stop drops it.
    await reader?.stop({ keepData: true });
    if (reader) await rm(reader.dataDir, { recursive: true, force: true });
    await writer?.stop();
  });

  test("a guardrail created on one node reaches the other's snapshot, secrets included", async () => {
    const created = await api(writer, "POST", "/api/guardrails", {
      id: "gr-shared",
      name: "shared",
      stages: ["output"],
      check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { authorization: "Bearer shared-secret" } } },
      action: "warn",
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const held = await eventually("the guardrail on the other node", async () => reader.guardrails.byId("gr-shared") ?? undefined);
    assert.deepEqual(held.check.type === "webhook" ? held.check.headers : null, { authorization: "Bearer shared-secret" });
  });

  test("an update on one node re-reads that guardrail alone on the other", async () => {
    for (const id of ["gr-kept", "gr-changed"]) {
      const created = await api(writer, "POST", "/api/guardrails", { id, name: id, stages: ["input"], check: { type: "secrets" }, action: "block" });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      await eventually(`${id} on the other node`, async () => reader.guardrails.byId(id) ?? undefined);
    }
    const kept = reader.guardrails.byId("gr-kept");
    assert.equal((await api(writer, "PUT", "/api/guardrails/gr-changed", { action: "warn" })).status, 200);
    await eventually("the update on the other node", async () => (reader.guardrails.byId("gr-changed")?.action === "warn" ? true : undefined));
    // The same object: the other node read back the changed row, not every guardrail.
    assert.equal(reader.guardrails.byId("gr-kept"), kept);
  });

  test("a guardrail deleted on one node leaves the other's snapshot", async () => {
    const created = await api(writer, "POST", "/api/guardrails", { id: "gr-gone", name: "gone", stages: ["input"], check: { type: "secrets" }, action: "block" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await eventually("the guardrail on the other node", async () => reader.guardrails.byId("gr-gone") ?? undefined);
    assert.equal((await api(writer, "DELETE", "/api/guardrails/gr-gone")).status, 200);
    await eventually("the deletion on the other node", async () => (reader.guardrails.byId("gr-gone") === null ? true : undefined));
  });
});
