/** Redaction: rewriting found spans by strategy, merging overlaps, and which check types may redact. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { CHECK_TYPES } from "../../../src/guardrails/check-types.js";
import { canRedact, mergeSpans, redact, redactSpans } from "../../../src/guardrails/redaction.js";

const text = "card 4111 1111 1111 1111 ok";
const card = { kind: "credit_card", start: 5, end: 24 };

test("replaces a finding with [REDACTED:<kind>] by default", () => {
  assert.equal(redact(text, [card]), "card [REDACTED:credit_card] ok");
});

test("replaces a finding with the configured replacement, filling in <kind>", () => {
  assert.equal(redact(text, [card], { strategy: "replace", replacement: "<<kind>>" }), "card <credit_card> ok");
  assert.equal(redact(text, [card], { strategy: "replace", replacement: "***" }), "card *** ok");
});

test("masks every character of a finding with a star", () => {
  assert.equal(redact(text, [card], { strategy: "mask" }), "card ******************* ok");
});

test("masks a character outside the BMP with one star", () => {
  assert.equal(redact("a \u{1F600}\u{1F600} b", [{ kind: "keyword", start: 2, end: 6 }], { strategy: "mask" }), "a ** b");
});

test("hashes a finding to its kind and the first 12 hex digits of its SHA-256", () => {
  const digest = createHash("sha256").update("4111 1111 1111 1111").digest("hex").slice(0, 12);
  assert.equal(redact(text, [card], { strategy: "hash" }), `card [credit_card:${digest}] ok`);
});

test("gives equal values equal hashes, so redacted texts can still be correlated", () => {
  const twice = "x@example.com x@example.com";
  const out = redact(twice, [
    { kind: "email", start: 0, end: 13 },
    { kind: "email", start: 14, end: 27 },
  ], { strategy: "hash" });
  const [a, b] = out.split(" ");
  assert.equal(a, b);
});

test("merges overlapping findings into one replacement, keeping the kind of the first", () => {
  const out = redact("abcdef", [
    { kind: "second", start: 2, end: 5 },
    { kind: "first", start: 1, end: 3 },
  ]);
  assert.equal(out, "a[REDACTED:first]f");
});

test("merges a finding contained in another", () => {
  assert.equal(redact("abcdef", [{ kind: "outer", start: 0, end: 6 }, { kind: "inner", start: 2, end: 3 }]), "[REDACTED:outer]");
});

test("keeps findings that only touch apart", () => {
  assert.equal(redact("abcd", [{ kind: "x", start: 0, end: 2 }, { kind: "y", start: 2, end: 4 }]), "[REDACTED:x][REDACTED:y]");
});

test("applies, where spans of several guardrails overlap, the options of the one listed first", () => {
  const out = redactSpans("secret-42", [
    { kind: "regex", start: 0, end: 9, options: { strategy: "replace", replacement: "[A]" } },
    { kind: "keyword", start: 0, end: 6, options: { strategy: "mask" } },
  ]);
  assert.equal(out, "[A]");
});

test("sorts spans by start and keeps the list order among spans starting together", () => {
  const merged = mergeSpans([
    { kind: "b", start: 4, end: 5 },
    { kind: "a2", start: 0, end: 1 },
    { kind: "a1", start: 0, end: 2 },
  ]);
  assert.deepEqual(merged.map((s) => s.kind), ["a2", "b"]);
  assert.equal(merged[0]?.end, 2);
});

test("leaves a text without findings as it is", () => {
  assert.equal(redact("nothing", []), "nothing");
});

test("lets pii, secrets, regex, keywords and webhook checks redact, and no others", () => {
  assert.deepEqual(
    CHECK_TYPES.filter((t) => canRedact(t)),
    ["pii", "secrets", "regex", "keywords", "webhook"],
  );
});
