/**
 * Guardrails through the real app: CRUD over REST and Connect with every default filled in, webhook
 * header values kept secret, scopes checked against their owners, every write reaching the in-memory
 * snapshot the request path reads, and each refused input answered with a 400 naming its field.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { GuardrailAction, GuardrailCheckType, GuardrailService, GuardrailStage } from "../../gen/gw/admin/v1/guardrail_pb.js";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import type { GuardrailSubject } from "../../src/guardrails/guardrail-set.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

type Json = Record<string, any /* JSON of any shape */>;

let app: TestApp;
let mcpClientId: string;

/** Owners for every scope, and a provider for the checks that call one; nothing is ever reached. */
const OWNERS = {
  providers: { openai: { keys: [{ id: "k1", name: "main", value: "sk-test", models: ["gpt-4o-mini"] }], network_config: { base_url: "http://127.0.0.1:9" } } },
  governance: {
    customers: [{ id: "cu-acme", name: "acme" }],
    teams: [{ id: "team-a", name: "team a", customer_id: "cu-acme" }],
    virtual_keys: [{ id: "vk-alice", name: "alice", value: "sk-gw-alice", team_id: "team-a" }],
  },
  mcp: { client_configs: [{ name: "docs", connection_type: "http", connection_string: "http://127.0.0.1:9/mcp" }] },
};

const ALICE: GuardrailSubject = { virtualKeyId: "vk-alice", teamId: "team-a", customerId: "cu-acme", mcpClientId: "" };

before(async () => {
  app = await startApp(appOptionsFromConfig(parseConfig(OWNERS, {})));
  const clients = await api(app, "GET", "/api/mcp/clients");
  mcpClientId = clients.body.clients.find((c: Json) => c.name === "docs").client_id;
});

after(async () => {
  await app?.stop();
});

/** A valid guardrail body with a fresh name, changed by `patch`. */
function body(patch: Json = {}): Json {
  return { name: `gr-${randomUUID()}`, stages: ["input"], check: { type: "pii", pii: { entities: ["email"] } }, action: "block", ...patch };
}

async function create(patch: Json = {}): Promise<Json> {
  const res = await api(app, "POST", "/api/guardrails", body(patch));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.guardrail;
}

/** The API's view of a guardrail without the timestamp a write moves. */
function stable(guardrail: Json): Json {
  const { updated_at: _updated, ...rest } = guardrail;
  return rest;
}

describe("guardrail CRUD", () => {
  test("creates a guardrail with every default filled in", async () => {
    const created = await create();
    assert.match(created.id, /^gr-/);
    assert.deepEqual(
      { ...created, id: null, name: null, created_at: null, updated_at: null },
      {
        id: null,
        name: null,
        description: "",
        enabled: true,
        stages: ["input"],
        scope: "global",
        scope_id: "",
        when: "",
        check: { type: "pii", pii: { entities: ["email"] } },
        action: "block",
        on_error: "block",
        timeout: "2s",
        sampling_rate: 1,
        created_at: null,
        updated_at: null,
      },
    );
  });

  test("fills in the replace strategy and its placeholder for a redact guardrail", async () => {
    const created = await create({ action: "redact" });
    assert.deepEqual(created.redaction, { strategy: "replace", replacement: "[REDACTED:<kind>]" });
  });

  test("reads a guardrail back by id and in the list", async () => {
    const created = await create({ description: "no emails" });
    const got = await api(app, "GET", `/api/guardrails/${created.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.guardrail, created);
    const listed = await api(app, "GET", "/api/guardrails");
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.guardrails.find((g: Json) => g.id === created.id), created);
    assert.equal(listed.body.count, listed.body.guardrails.length);
  });

  test("changes only the fields a PUT names", async () => {
    const created = await create({ description: "before" });
    const updated = await api(app, "PUT", `/api/guardrails/${created.id}`, { enabled: false, sampling_rate: 0.25 });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(stable(updated.body.guardrail), stable({ ...created, enabled: false, sampling_rate: 0.25 }));
  });

  test("accepts a PUT of what GET returned and changes nothing", async () => {
    const created = await create({
      stages: ["tool_input", "tool_output"],
      scope: "virtual_key",
      scope_id: "vk-alice",
      when: `tool == "search"`,
      check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { authorization: "Bearer hook-secret" }, timeout: "500ms" } },
      action: "redact",
      redaction: { strategy: "mask" },
      on_error: "allow",
      timeout: "1s",
    });
    const got = await api(app, "GET", `/api/guardrails/${created.id}`);
    const put = await api(app, "PUT", `/api/guardrails/${created.id}`, got.body.guardrail);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(stable(put.body.guardrail), stable(got.body.guardrail));
  });

  test("drops the redaction when a PUT moves the action off redact", async () => {
    const created = await create({ action: "redact", redaction: { strategy: "hash" } });
    const updated = await api(app, "PUT", `/api/guardrails/${created.id}`, { action: "warn" });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.guardrail.action, "warn");
    assert.equal(updated.body.guardrail.redaction, undefined);
  });

  test("deletes a guardrail, after which it reads as not found", async () => {
    const created = await create();
    const deleted = await api(app, "DELETE", `/api/guardrails/${created.id}`);
    assert.deepEqual(deleted, { status: 200, body: { status: "success" } });
    const got = await api(app, "GET", `/api/guardrails/${created.id}`);
    assert.equal(got.status, 404);
    assert.equal(got.body.error.type, "guardrail_not_found");
  });

  test("answers 404 for an id that names no guardrail", async () => {
    for (const [method, payload] of [["GET", undefined], ["PUT", { enabled: false }], ["DELETE", undefined]] as const) {
      const res = await api(app, method, "/api/guardrails/gr-missing", payload);
      assert.equal(res.status, 404, `${method}: ${JSON.stringify(res.body)}`);
    }
  });

  test("refuses a second guardrail with a name already taken, with a 409", async () => {
    const first = await create();
    const res = await api(app, "POST", "/api/guardrails", body({ name: first.name }));
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^name: .*names are unique/);
  });

  test("creates and lists guardrails over Connect", async () => {
    const client = clientFor(GuardrailService, app.url, "connect");
    const { guardrail } = await client.createGuardrail({
      guardrail: { name: `connect-${randomUUID()}`, stages: [GuardrailStage.OUTPUT], check: { type: GuardrailCheckType.SECRETS }, action: GuardrailAction.BLOCK },
    });
    assert.ok(guardrail);
    const listed = await client.listGuardrails({});
    assert.ok(listed.guardrails.some((g) => g.id === guardrail.id && g.timeout === "2s"));
    await client.deleteGuardrail({ id: guardrail.id });
  });
});

describe("webhook header values", () => {
  const webhook = (headers: Json) => ({ check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers } } });

  test("read back as <redacted>", async () => {
    const created = await create(webhook({ authorization: "Bearer hook-secret" }));
    assert.deepEqual(created.check.webhook.headers, { authorization: "<redacted>" });
    const listed = await api(app, "GET", "/api/guardrails");
    assert.doesNotMatch(JSON.stringify(listed.body), /hook-secret/);
  });

  test("keep their stored value when sent back as <redacted>", async () => {
    const created = await create(webhook({ authorization: "Bearer kept-secret" }));
    const put = await api(app, "PUT", `/api/guardrails/${created.id}`, { check: created.check });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const check = app.guardrails.byId(created.id)?.check;
    assert.deepEqual(check?.type === "webhook" ? check.headers : null, { authorization: "Bearer kept-secret" });
  });

  test("are stored encrypted", async () => {
    const created = await create(webhook({ authorization: "Bearer sealed-secret" }));
    const rows = await app.store.fork().getConnection().execute(`select "secret_headers", "check" from "guardrail" where "id" = '${created.id}'`);
    assert.equal(rows.length, 1);
    assert.doesNotMatch(JSON.stringify(rows), /sealed-secret/);
  });
});

describe("scopes", () => {
  test("accept the id of an existing customer, team and virtual key", async () => {
    for (const [scope, scopeId] of [["customer", "cu-acme"], ["team", "team-a"], ["virtual_key", "vk-alice"]]) {
      const created = await create({ scope, scope_id: scopeId });
      assert.equal(created.scope_id, scopeId);
    }
  });

  test("pin an MCP client named by its name to the client's id", async () => {
    const created = await create({ scope: "mcp_client", scope_id: "docs", stages: ["tool_definition"] });
    assert.equal(created.scope_id, mcpClientId);
  });
});

describe("the in-memory snapshot", () => {
  test("takes a created guardrail in at once", async () => {
    const created = await create({ scope: "virtual_key", scope_id: "vk-alice", stages: ["output"] });
    assert.ok(app.guardrails.snapshot.applicable("output", ALICE).some((g) => g.id === created.id));
  });

  test("leaves a disabled guardrail out", async () => {
    const created = await create({ scope: "team", scope_id: "team-a", stages: ["tool_output"] });
    await api(app, "PUT", `/api/guardrails/${created.id}`, { enabled: false });
    assert.ok(!app.guardrails.snapshot.applicable("tool_output", ALICE).some((g) => g.id === created.id));
  });

  test("forgets a deleted guardrail", async () => {
    const created = await create();
    await api(app, "DELETE", `/api/guardrails/${created.id}`);
    assert.equal(app.guardrails.byId(created.id), null);
  });

  test("holds the compiled settings of a guardrail", async () => {
    const created = await create({ check: { type: "regex", regex: { patterns: ["ACME-\\d{6}"], case_insensitive: true } }, action: "redact", timeout: "750ms", sampling_rate: 0.5 });
    const held = app.guardrails.byId(created.id);
    assert.deepEqual(held?.check, { type: "regex", patterns: ["ACME-\\d{6}"], caseInsensitive: true });
    assert.equal(held?.content?.type, "regex");
    assert.deepEqual(held?.redaction, { strategy: "replace", replacement: "[REDACTED:<kind>]" });
    assert.equal(held?.timeoutMs, 750);
    assert.equal(held?.samplingRate, 0.5);
  });
});

/**
 * Each refused input: what it is, the body's change, and the start of the 400's message, which names the
 * field (the JSON reader's own refusals name it from the request's root, `guardrail.`).
 */
const REFUSALS: [string, Json, RegExp][] = [
  ["an unknown check type", { check: { type: "virus_scan" } }, /^guardrail\.check\.type: /],
  ["a check without a type", { check: { pii: {} } }, /^check\.type: is required/],
  ["no check", { check: null }, /^check: is required/],
  ["an unknown stage", { stages: ["input", "thinking"] }, /^guardrail\.stages\[1\]: /],
  ["no stage", { stages: [] }, /^stages: needs at least one stage/],
  ["a stage listed twice", { stages: ["input", "input"] }, /^stages\[1\]: "input" is listed twice/],
  ["redact on a prompt_injection check", { check: { type: "prompt_injection" }, action: "redact" }, /^action: "redact" is valid for pii, secrets, regex, keywords, webhook checks only/],
  ["redact on a moderation check", { check: { type: "moderation", moderation: { provider: "openai", model: "omni-moderation-latest" } }, action: "redact" }, /^action: "redact" is valid/],
  ["redact on an llm_judge check", { check: { type: "llm_judge", llm_judge: { provider: "openai", model: "gpt-4o-mini", instructions: "no insults" } }, action: "redact" }, /^action: "redact" is valid/],
  ["no action", { action: undefined }, /^action: is required/],
  ["a when expression with a syntax error", { when: `stage == "input" &&` }, /^when: syntax error at line 1, column \d+/],
  ["a when expression with an unknown variable", { when: `stag == "input"` }, /^when: unknown variable "stag" at line 1, column 1; use one of: .*stage, mcp_client, tool/],
  ["a when expression that is not boolean", { when: "tool" }, /^when: must be a boolean expression/],
  ["a webhook URL the egress policy refuses", { check: { type: "webhook", webhook: { url: "http://169.254.169.254/latest/meta-data" } } }, /^check\.webhook\.url: .*not a permitted destination/],
  ["a webhook URL that is not http(s)", { check: { type: "webhook", webhook: { url: "ftp://127.0.0.1/check" } } }, /^check\.webhook\.url: must be an http:\/\/ or https:\/\/ URL/],
  ["a webhook without a URL", { check: { type: "webhook" } }, /^check\.webhook\.url: is required/],
  ["a webhook timeout longer than the guardrail's", { check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", timeout: "5s" } } }, /^check\.webhook\.timeout: is longer than the guardrail's timeout/],
  ["a webhook header name that is not a token", { check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { "bad header": "x" } } } }, /^check\.webhook\.headers\["bad header"\]: is not a valid header name/],
  ["a webhook header value holding a line break", { check: { type: "webhook", webhook: { url: "http://127.0.0.1:9/check", headers: { "x-a": "b\r\nx-injected: 1" } } } }, /^check\.webhook\.headers\["x-a"\]: must not contain line breaks or NUL characters/],
  ["a timeout over 60s", { timeout: "61s" }, /^timeout: must be at most 60s/],
  ["a timeout under 1ms", { timeout: "500us" }, /^timeout: must be at least 1ms/],
  ["a zero timeout", { timeout: "0s" }, /^timeout: must be greater than 0/],
  ["a timeout that is not a duration", { timeout: "2 seconds" }, /^timeout: invalid duration "2 seconds"/],
  ["a timeout in calendar months", { timeout: "1M" }, /^timeout: invalid duration "1M"/],
  ["a sampling rate above 1", { sampling_rate: 1.5 }, /^sampling_rate: must be a number from 0 to 1/],
  ["a negative sampling rate", { sampling_rate: -0.1 }, /^sampling_rate: must be a number from 0 to 1/],
  ["an unknown PII entity", { check: { type: "pii", pii: { entities: ["email", "passport"] } } }, /^guardrail\.check\.pii\.entities\[1\]: /],
  ["an empty regex list", { check: { type: "regex", regex: { patterns: [] } } }, /^check\.regex\.patterns: /],
  ["a regex check without settings", { check: { type: "regex" } }, /^check\.regex\.patterns: /],
  ["a regex that does not compile", { check: { type: "regex", regex: { patterns: ["ok", "(unclosed"] } } }, /^check\.regex\.patterns\[1\]: .*RE2/],
  ["a regex that matches the empty text", { check: { type: "regex", regex: { patterns: ["a*"] } } }, /^check\.regex\.patterns\[0\]: /],
  ["an empty regex", { check: { type: "regex", regex: { patterns: [""] } } }, /^check\.regex\.patterns\[0\]: /],
  ["an empty keyword list", { check: { type: "keywords", keywords: { words: [] } } }, /^check\.keywords\.words: /],
  ["a blank keyword", { check: { type: "keywords", keywords: { words: ["secret", " "] } } }, /^check\.keywords\.words\[1\]: /],
  ["a moderation provider that is not configured", { check: { type: "moderation", moderation: { provider: "nope", model: "omni-moderation-latest" } } }, /^check\.moderation\.provider: names no configured provider/],
  ["a moderation check without a model", { check: { type: "moderation", moderation: { provider: "openai" } } }, /^check\.moderation\.model: is required/],
  ["an llm_judge provider that is not configured", { check: { type: "llm_judge", llm_judge: { provider: "nope", model: "m", instructions: "no insults" } } }, /^check\.llm_judge\.provider: names no configured provider/],
  ["an llm_judge check without instructions", { check: { type: "llm_judge", llm_judge: { provider: "openai", model: "gpt-4o-mini" } } }, /^check\.llm_judge\.instructions: is required/],
  ["the settings of another check type", { check: { type: "pii", regex: { patterns: ["x"] } } }, /^check\.regex: is the setting of a regex check, but check\.type is pii/],
  ["a setting a check does not have", { check: { type: "secrets", secrets: { entropy: 3 } } }, /^unknown field "guardrail\.check\.secrets\.entropy"/],
  ["a field a guardrail does not have", { priority: 1 }, /^unknown field "guardrail\.priority"/],
  ["a scope without its scope_id", { scope: "team" }, /^scope_id: is required/],
  ["a scope_id on a global guardrail", { scope_id: "team-a" }, /^scope_id: must be empty for a global guardrail/],
  ["a scope_id naming no customer", { scope: "customer", scope_id: "cu-nope" }, /^scope_id: names no customer/],
  ["a scope_id naming no team", { scope: "team", scope_id: "team-nope" }, /^scope_id: names no team/],
  ["a scope_id naming no virtual key", { scope: "virtual_key", scope_id: "vk-nope" }, /^scope_id: names no virtual key/],
  ["a scope_id naming no MCP client", { scope: "mcp_client", scope_id: "nope" }, /^scope_id: names no MCP client/],
  ["an unknown scope", { scope: "organization" }, /^guardrail\.scope: /],
  ["a redaction on a guardrail that does not redact", { redaction: { strategy: "mask" } }, /^redaction: applies only to action "redact"/],
  ["a replacement with the mask strategy", { action: "redact", redaction: { strategy: "mask", replacement: "***" } }, /^redaction\.replacement: applies only to strategy "replace"/],
  ["an unknown on_error", { on_error: "retry" }, /^guardrail\.on_error: /],
  ["a guardrail without a name", { name: "" }, /^name: is required/],
];

describe("refused input", () => {
  for (const [what, patch, message] of REFUSALS) {
    test(`answers 400 naming the field for ${what}`, async () => {
      const payload = body(patch);
      for (const [key, value] of Object.entries(payload)) if (value === undefined) delete payload[key];
      const res = await api(app, "POST", "/api/guardrails", payload);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, message);
    });
  }

  test("answers 400 naming the field for an update that breaks a rule, and keeps the stored guardrail", async () => {
    const created = await create();
    const res = await api(app, "PUT", `/api/guardrails/${created.id}`, { timeout: "90s" });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /^timeout: must be at most 60s/);
    assert.equal((await api(app, "GET", `/api/guardrails/${created.id}`)).body.guardrail.timeout, "2s");
  });
});
