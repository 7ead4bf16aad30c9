/** The egress policy's order of decisions: configured deny, then allow, then the built-in denials, then the allow list. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EgressPolicy } from "../../src/config/egress-policy.js";

test("a configured deny refuses even what allow lists", () => {
  const policy = new EgressPolicy({ allow: ["10.0.0.0/8"], deny: ["10.1.0.0/16"] });
  assert.match(policy.refusal("10.1.2.3") ?? "", /network\.egress\.deny/);
  assert.equal(policy.refusal("10.2.0.1"), null);
});

test("link-local addresses and metadata names are refused by default, and allow lifts that", () => {
  const policy = new EgressPolicy();
  assert.match(policy.refusal("169.254.169.254") ?? "", /link-local or cloud metadata/);
  assert.match(policy.refusal("fe80::1") ?? "", /link-local or cloud metadata/);
  assert.match(policy.refusal("METADATA.google.internal.") ?? "", /link-local or cloud metadata/);
  assert.equal(policy.refusal("api.openai.com"), null);
  assert.equal(new EgressPolicy({ allow: ["169.254.169.254"], deny: [] }).refusal("169.254.169.254"), null);
});

test("a non-empty allow list refuses everything it does not match", () => {
  const policy = new EgressPolicy({ allow: ["*.example.com", "api.openai.com"], deny: [] });
  assert.equal(policy.refusal("llm.example.com"), null);
  assert.equal(policy.refusal("api.openai.com"), null);
  assert.match(policy.refusal("example.org") ?? "", /not in network\.egress\.allow/);
});

test("bracketed IPv6 hosts are matched as addresses", () => {
  assert.match(new EgressPolicy({ allow: [], deny: ["::1/128"] }).refusal("[::1]") ?? "", /network\.egress\.deny/);
});

test("a bad entry is refused naming its path", () => {
  assert.throws(() => new EgressPolicy({ allow: ["not a host"], deny: [] }), /network\.egress\.allow\[0\]/);
  assert.throws(() => new EgressPolicy({ allow: [], deny: ["10.0.0.0/33"] }), /network\.egress\.deny\[0\]/);
});
