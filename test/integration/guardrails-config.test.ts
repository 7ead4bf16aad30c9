/**
 * The config file's `guardrails`: entries in the API's JSON, checked at load with the entry's path, seeded
 * into the store after the owners they name, and applied again by a config reload exactly when the file's
 * entry changed, to the store and to the in-memory snapshot alike.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { appOptionsFromConfig, type AppOptions } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

type Json = Record<string, any /* JSON of any shape */>;

/** Owners and a provider the entries may name; nothing is ever reached. */
const OWNERS = {
  providers: { openai: { keys: [{ id: "k1", name: "main", value: "sk-test", models: ["gpt-4o-mini"] }], network_config: { base_url: "http://127.0.0.1:9" } } },
  governance: {
    customers: [{ id: "cu-acme", name: "acme" }],
    teams: [{ id: "team-a", name: "team a", customer_id: "cu-acme" }],
    virtual_keys: [{ id: "vk-alice", name: "alice", value: "sk-gw-alice", team_id: "team-a" }],
  },
};

/** A guardrail entry with the given id, changed by `patch`. */
function entry(id: string, patch: Json = {}): Json {
  return { id, name: `guardrail ${id}`, stages: ["input"], check: { type: "secrets" }, action: "block", ...patch };
}

/** The app options of a file with the owners, these guardrails and `extra` sections. */
function optionsOf(guardrails: Json[], extra: Json = {}, env: NodeJS.ProcessEnv = {}): Partial<AppOptions> {
  return appOptionsFromConfig(parseConfig({ ...OWNERS, ...extra, guardrails }, env));
}

async function read(app: TestApp, id: string): Promise<Json> {
  const res = await api(app, "GET", `/api/guardrails/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.guardrail;
}

describe("loading the file", () => {
  test("refuses an unknown check type, naming the entry's path", () => {
    assert.throws(() => optionsOf([entry("gr-1", { check: { type: "virus_scan" } })]), /guardrails\[0\]\.check\.type: /);
  });

  test("refuses an entry without an id", () => {
    const { id: _id, ...withoutId } = entry("gr-1");
    assert.throws(() => optionsOf([withoutId]), /guardrails\[0\]\.id: is required/);
  });

  test("refuses an entry that breaks a rule, naming its path", () => {
    assert.throws(() => optionsOf([entry("gr-1", { check: { type: "prompt_injection" }, action: "redact" })]), /guardrails\[0\]\.action: "redact" is valid for/);
  });

  test("refuses a when expression that does not compile, naming its path", () => {
    assert.throws(() => optionsOf([entry("gr-1", { when: "stage ==" })]), /guardrails\[0\]\.when: syntax error/);
  });

  test("refuses two entries with one name", () => {
    assert.throws(() => optionsOf([entry("gr-1"), entry("gr-2", { name: "guardrail gr-1" })]), /guardrails\[1\]\.name: "guardrail gr-1" is also the name of guardrails\[0\]/);
  });

  test("refuses two entries with one id", () => {
    assert.throws(() => optionsOf([entry("gr-1"), entry("gr-1", { name: "other" })]), /guardrails\[1\]\.id: "gr-1" is also the id of guardrails\[0\]/);
  });
});

describe("starting with the file", () => {
  test("seeds its guardrails with every default filled in", async () => {
    const app = await startApp(optionsOf([entry("gr-seeded", { scope: "team", scope_id: "team-a" })]));
    try {
      const { created_at: _c, updated_at: _u, ...seeded } = await read(app, "gr-seeded");
      assert.deepEqual(seeded, {
        id: "gr-seeded",
        name: "guardrail gr-seeded",
        description: "",
        enabled: true,
        stages: ["input"],
        scope: "team",
        scope_id: "team-a",
        when: "",
        check: { type: "secrets", secrets: {} },
        action: "block",
        on_error: "block",
        timeout: "2s",
        sampling_rate: 1,
      });
      assert.equal(app.guardrails.snapshot.applicable("input", { virtualKeyId: "vk-alice", teamId: "team-a", customerId: "cu-acme", mcpClientId: "" })[0]?.id, "gr-seeded");
    } finally {
      await app.stop();
    }
  });

  test("takes webhook header values from env.NAME references", async () => {
    const hook = { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { authorization: "env.GW_TEST_HOOK_TOKEN" } } };
    const app = await startApp(optionsOf([entry("gr-hook", { check: hook })], {}, { GW_TEST_HOOK_TOKEN: "Bearer from-env" }));
    try {
      const check = app.guardrails.byId("gr-hook")?.check;
      assert.deepEqual(check?.type === "webhook" ? check.headers : null, { authorization: "Bearer from-env" });
      assert.deepEqual((await read(app, "gr-hook")).check.webhook.headers, { authorization: "<redacted>" });
    } finally {
      await app.stop();
    }
  });

  test("stops when a guardrail's scope names no owner, naming its path", async () => {
    await assert.rejects(startApp(optionsOf([entry("gr-orphan", { scope: "team", scope_id: "team-nope" })])), /guardrails\[0\]\.scope_id: names no team/);
  });

  test("stops when a guardrail's provider is not configured, naming its path", async () => {
    const judge = { type: "llm_judge", llm_judge: { provider: "anthropic", model: "claude-haiku-4-5", instructions: "no insults" } };
    await assert.rejects(startApp(optionsOf([entry("gr-judge", { check: judge })])), /guardrails\[0\]\.check\.llm_judge\.provider: names no configured provider/);
  });

  test("stops when network.egress refuses a webhook's host, naming its path", async () => {
    const hook = { type: "webhook", webhook: { url: "http://hooks.example.com/check" } };
    const options = optionsOf([entry("gr-hook", { check: hook })], { network: { egress: { deny: ["hooks.example.com"] } } });
    await assert.rejects(startApp(options), /guardrails\[0\]\.check\.webhook\.url: .*refused by network\.egress\.deny/);
  });
});

describe("reloading the file", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp(optionsOf([entry("gr-reloaded"), entry("gr-edited")]));
  });

  after(async () => {
    await app?.stop();
  });

  test("applies a changed entry to the store and to the snapshot", async () => {
    await app.reload(optionsOf([entry("gr-reloaded", { sampling_rate: 0.5 }), entry("gr-edited")]));
    assert.equal((await read(app, "gr-reloaded")).sampling_rate, 0.5);
    assert.equal(app.guardrails.byId("gr-reloaded")?.samplingRate, 0.5);
  });

  test("adds an entry the file gained", async () => {
    await app.reload(optionsOf([entry("gr-reloaded"), entry("gr-edited"), entry("gr-added", { stages: ["tool_output"] })]));
    assert.deepEqual((await read(app, "gr-added")).stages, ["tool_output"]);
    assert.ok(app.guardrails.snapshot.hasStage("tool_output"));
  });

  test("keeps an edit made through the API while the file's entry is unchanged", async () => {
    const edited = await api(app, "PUT", "/api/guardrails/gr-edited", { description: "edited through the API" });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    await app.reload(optionsOf([entry("gr-reloaded"), entry("gr-edited")]));
    assert.equal((await read(app, "gr-edited")).description, "edited through the API");
  });

  test("changes nothing when an entry breaks a rule only the store can check", async () => {
    const before = await read(app, "gr-reloaded");
    await assert.rejects(app.reload(optionsOf([entry("gr-reloaded", { scope: "virtual_key", scope_id: "vk-nope" })])), /guardrails\[0\]\.scope_id: names no virtual key/);
    assert.deepEqual(await read(app, "gr-reloaded"), before);
  });

  test("takes what GET shows, with its secrets filled in, as an entry", async () => {
    const created = await api(app, "POST", "/api/guardrails", {
      id: "gr-from-api",
      name: "from the api",
      description: "every field",
      enabled: false,
      stages: ["tool_input", "tool_definition"],
      scope: "customer",
      scope_id: "cu-acme",
      when: `mcp_client == "docs"`,
      check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { "x-token": "hook-secret" }, timeout: "1s" } },
      action: "redact",
      redaction: { strategy: "replace", replacement: "[gone]" },
      on_error: "allow",
      timeout: "1500ms",
      sampling_rate: 0.75,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { created_at: _c, updated_at: _u, ...shown } = created.body.guardrail as Json;
    const copy = { ...shown, id: "gr-from-file", name: "from the file", check: { ...shown["check"], webhook: { ...shown["check"].webhook, headers: { "x-token": "hook-secret" } } } };
    await app.reload(optionsOf([entry("gr-reloaded"), entry("gr-edited"), copy]));
    const { created_at: _c2, updated_at: _u2, ...seeded } = await read(app, "gr-from-file");
    assert.deepEqual(seeded, { ...shown, id: "gr-from-file", name: "from the file" });
  });
});
