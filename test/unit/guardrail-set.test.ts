/**
 * The in-memory guardrails the request path reads: per stage and subject, broadest scope first, disabled
 * ones left out, and a new snapshot on every change while a snapshot already taken stays as it was.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { GuardrailDefinition, GuardrailScope, GuardrailStage } from "../../src/guardrails/definition.js";
import { GuardrailSet, type GuardrailSubject } from "../../src/guardrails/guardrail-set.js";

function guardrail(id: string, scope: GuardrailScope, scopeId: string, stages: GuardrailStage[] = ["input"], enabled = true): GuardrailDefinition {
  return {
    id,
    name: id,
    enabled,
    stages: new Set(stages),
    scope,
    scopeId,
    condition: null,
    check: { type: "secrets" },
    content: null,
    action: "block",
    redaction: null,
    onError: "block",
    timeoutMs: 2000,
    samplingRate: 1,
  };
}

const ALICE: GuardrailSubject = { virtualKeyId: "vk-alice", teamId: "team-a", customerId: "cu-a", mcpClientId: "" };

function ids(list: readonly GuardrailDefinition[]): string[] {
  return list.map((g) => g.id);
}

describe("GuardrailSet", () => {
  test("has an empty snapshot before any guardrail is put", () => {
    const set = new GuardrailSet();
    assert.equal(set.snapshot.empty, true);
    assert.deepEqual(set.snapshot.applicable("input", ALICE), []);
  });

  test("lists the guardrails of a subject broadest scope first", () => {
    const set = new GuardrailSet();
    set.replaceAll([
      guardrail("d-key", "virtual_key", "vk-alice"),
      guardrail("c-team", "team", "team-a"),
      guardrail("b-customer", "customer", "cu-a"),
      guardrail("a-global", "global", ""),
      guardrail("e-client", "mcp_client", "client-1"),
    ]);
    assert.deepEqual(ids(set.snapshot.applicable("input", ALICE)), ["a-global", "b-customer", "c-team", "d-key"]);
    assert.deepEqual(ids(set.snapshot.applicable("input", { ...ALICE, mcpClientId: "client-1" })), ["a-global", "b-customer", "c-team", "d-key", "e-client"]);
  });

  test("leaves out guardrails of other owners", () => {
    const set = new GuardrailSet();
    set.replaceAll([guardrail("bob", "virtual_key", "vk-bob"), guardrail("team-b", "team", "team-b")]);
    assert.deepEqual(ids(set.snapshot.applicable("input", ALICE)), []);
  });

  test("lists a guardrail only at its stages", () => {
    const set = new GuardrailSet();
    set.put(guardrail("tools", "global", "", ["tool_input", "tool_output"]));
    assert.equal(set.snapshot.hasStage("input"), false);
    assert.equal(set.snapshot.hasStage("tool_output"), true);
    assert.deepEqual(ids(set.snapshot.applicable("tool_input", ALICE)), ["tools"]);
    assert.deepEqual(ids(set.snapshot.applicable("output", ALICE)), []);
  });

  test("leaves out disabled guardrails", () => {
    const set = new GuardrailSet();
    set.put(guardrail("off", "global", "", ["input"], false));
    assert.equal(set.snapshot.empty, true);
    assert.equal(set.byId("off")?.enabled, false);
  });

  test("replaces the snapshot on a change and leaves one already taken as it was", () => {
    const set = new GuardrailSet();
    set.put(guardrail("first", "global", ""));
    const before = set.snapshot;
    set.put(guardrail("second", "global", ""));
    set.remove("first");
    assert.deepEqual(ids(before.applicable("input", ALICE)), ["first"]);
    assert.deepEqual(ids(set.snapshot.applicable("input", ALICE)), ["second"]);
  });

  test("tells a listener of every new snapshot", () => {
    const set = new GuardrailSet();
    const seen: number[] = [];
    const stop = set.onChange((snapshot) => seen.push(snapshot.all().length));
    set.put(guardrail("one", "global", ""));
    set.put(guardrail("two", "global", ""));
    stop();
    set.remove("one");
    assert.deepEqual(seen, [1, 2]);
  });
});
