/** The regex check: a corpus of patterns and texts, the patterns it refuses, and its configuration. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError } from "../../../src/errors.js";
import { NO_FINDINGS } from "../../../src/guardrails/check-types.js";
import { compileRegexCheck } from "../../../src/guardrails/checks/regex.js";
import { corpus, texts } from "./corpus.js";

interface RegexCorpus {
  matching: { name: string; patterns: string[]; case_insensitive?: boolean; text: string; matches: string[] }[];
  refused: { name: string; pattern: string; message: string }[];
}

const { matching, refused } = corpus<RegexCorpus>("regex");

for (const { name, patterns, case_insensitive, text, matches } of matching) {
  test(`matches ${name}`, () => {
    const check = compileRegexCheck({ type: "regex", patterns, ...(case_insensitive === undefined ? {} : { case_insensitive }) });
    assert.deepEqual(texts(text, check.scan(text)), matches);
  });
}

for (const { name, pattern, message } of refused) {
  test(`refuses ${name}, naming the pattern`, () => {
    assert.throws(
      () => compileRegexCheck({ type: "regex", patterns: ["fine", pattern] }),
      (err: unknown) => err instanceof GatewayError && err.type === "invalid_guardrail_check" && err.field === "check.patterns[1]" && err.message.includes(message),
    );
  });
}

test("runs a nested quantifier over a long near-miss to the end", () => {
  // A backtracking engine would not return from this; the test only needs it to return with the right answer.
  const check = compileRegexCheck({ type: "regex", patterns: ["(a+)+$", "(x|x)*y"] });
  assert.deepEqual(check.scan(`${"a".repeat(20_000)}b ${"x".repeat(20_000)}`), []);
});

test("reports each finding as kind regex with the index of its pattern", () => {
  const findings = compileRegexCheck({ type: "regex", patterns: ["foo", "bar"] }).scan("bar foo");
  assert.deepEqual(findings, [
    { kind: "regex", start: 0, end: 3, rule: "patterns[1]" },
    { kind: "regex", start: 4, end: 7, rule: "patterns[0]" },
  ]);
});

test("answers the shared empty result when no pattern matches", () => {
  assert.equal(compileRegexCheck({ type: "regex", patterns: ["EMP-\\d{6}", "falcon"] }).scan("nothing to see"), NO_FINDINGS);
});

test("refuses an empty pattern list", () => {
  assert.throws(() => compileRegexCheck({ type: "regex", patterns: [] }), /check\.patterns: must not be empty/);
});

test("refuses a case_insensitive that is not a boolean", () => {
  assert.throws(() => compileRegexCheck({ type: "regex", patterns: ["a"], case_insensitive: "yes" } as never), /check\.case_insensitive: must be true or false/);
});

test("refuses a setting the check does not have", () => {
  assert.throws(() => compileRegexCheck({ type: "regex", patterns: ["a"], multiline: true } as never), /check\.multiline: unknown setting/);
});
