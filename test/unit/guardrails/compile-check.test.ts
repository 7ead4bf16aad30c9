/** Compiling a built-in check from its configuration: dispatch by type and errors that name the field. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError, httpStatusOf } from "../../../src/errors.js";
import { CONTENT_CHECK_TYPES, type ContentCheckConfig } from "../../../src/guardrails/check-types.js";
import { compileContentCheck, isContentCheckType } from "../../../src/guardrails/compile-check.js";

test("compiles each built-in check type to a check of that type", () => {
  const configs: ContentCheckConfig[] = [
    { type: "pii" },
    { type: "secrets" },
    { type: "regex", patterns: ["x+"] },
    { type: "keywords", words: ["x"] },
    { type: "prompt_injection" },
  ];
  assert.deepEqual(
    configs.map((c) => compileContentCheck(c).type),
    [...CONTENT_CHECK_TYPES],
  );
});

test("refuses a check type that is not built in, naming check.type", () => {
  assert.throws(
    () => compileContentCheck({ type: "webhook" } as never),
    (err: unknown) =>
      err instanceof GatewayError && err.field === "check.type" && httpStatusOf(err) === 400 && /"webhook" is not a built-in content check/.test(err.message),
  );
});

test("refuses a configuration that is not an object", () => {
  assert.throws(() => compileContentCheck(null as never), /check: must be an object/);
});

test("tells built-in check types from the others", () => {
  assert.deepEqual(
    ["pii", "secrets", "regex", "keywords", "prompt_injection", "moderation", "llm_judge", "webhook", "nope"].filter(isContentCheckType),
    ["pii", "secrets", "regex", "keywords", "prompt_injection"],
  );
});
