/** The pii check: each entity's corpus of real and look-alike values, and the check's configuration. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError } from "../../../src/errors.js";
import { NO_FINDINGS } from "../../../src/guardrails/check-types.js";
import { compilePiiCheck, PII_ENTITIES } from "../../../src/guardrails/checks/pii.js";
import { corpus, texts } from "./corpus.js";

interface EntityCorpus {
  entity: string;
  found: { name: string; text: string; match: string }[];
  ignored: { name: string; text: string }[];
}

for (const file of ["pii-credit-card", "pii-iban", "pii-us-ssn", "pii-phone", "pii-ip-address", "pii-email"]) {
  const { entity, found, ignored } = corpus<EntityCorpus>(file);
  const check = compilePiiCheck({ type: "pii", entities: [entity] });
  for (const { name, text, match } of found) {
    test(`${entity}: finds ${name}`, () => {
      const findings = check.scan(text);
      assert.deepEqual(texts(text, findings), [match]);
      assert.equal(findings[0]?.kind, entity);
    });
  }
  for (const { name, text } of ignored) {
    test(`${entity}: ignores ${name}`, () => {
      assert.deepEqual(texts(text, check.scan(text)), []);
    });
  }
}

test("reports the findings of several entities in the order of the text", () => {
  const text = "Mail jane@example.com, card 4111 1111 1111 1111, from 10.1.2.3 or +44 20 7946 0958.";
  const findings = compilePiiCheck({ type: "pii" }).scan(text);
  assert.deepEqual(
    findings.map((f) => [f.kind, text.slice(f.start, f.end)]),
    [
      ["email", "jane@example.com"],
      ["credit_card", "4111 1111 1111 1111"],
      ["ip_address", "10.1.2.3"],
      ["phone", "+44 20 7946 0958"],
    ],
  );
});

test("scans all entities when none are listed", () => {
  const text = "536-22-8726 DE89370400440532013000";
  assert.deepEqual(
    compilePiiCheck({ type: "pii" }).scan(text).map((f) => f.kind),
    ["us_ssn", "iban"],
  );
});

test("reports only the configured entities", () => {
  const text = "jane@example.com 4111111111111111";
  assert.deepEqual(
    compilePiiCheck({ type: "pii", entities: ["credit_card"] }).scan(text).map((f) => f.kind),
    ["credit_card"],
  );
});

test("answers the shared empty result for a text with no personal data", () => {
  const check = compilePiiCheck({ type: "pii" });
  assert.equal(check.scan("Nothing personal here: version 1.2.3, 12:30:45, order 1234."), NO_FINDINGS);
  assert.equal(check.scan(""), NO_FINDINGS);
});

test("finds the same entities again on a second scan with the same compiled check", () => {
  const check = compilePiiCheck({ type: "pii", entities: ["email"] });
  assert.equal(check.scan("a@example.com").length, 1);
  assert.equal(check.scan("b@example.com and c@example.com").length, 2);
});

test("scans a long run of digits without finding a card in it", () => {
  assert.deepEqual(compilePiiCheck({ type: "pii" }).scan("1".repeat(50_000)), []);
});

test("refuses an unknown entity, naming its place in the list", () => {
  assert.throws(
    () => compilePiiCheck({ type: "pii", entities: ["email", "phone", "passport"] }),
    (err: unknown) =>
      err instanceof GatewayError &&
      err.code === "invalid_argument" &&
      err.type === "invalid_guardrail_check" &&
      err.field === "check.entities[2]" &&
      err.message.startsWith('check.entities[2]: unknown PII entity "passport"'),
  );
});

test("refuses an empty entity list", () => {
  assert.throws(() => compilePiiCheck({ type: "pii", entities: [] }), /check\.entities: must name at least one of/);
});

test("refuses a setting the check does not have", () => {
  assert.throws(() => compilePiiCheck({ type: "pii", mask: true } as never), /check\.mask: unknown setting of a pii check/);
});

test("names the field under the prefix it is given", () => {
  assert.throws(
    () => compilePiiCheck({ type: "pii", entities: ["ssn"] }, "guardrails[3].check"),
    (err: unknown) => err instanceof GatewayError && err.field === "guardrails[3].check.entities[0]",
  );
});

test("lists its entities for the documentation", () => {
  assert.deepEqual([...PII_ENTITIES].sort(), ["credit_card", "email", "iban", "ip_address", "phone", "us_ssn"]);
});
