/** The secrets check: a corpus of fake secrets of each kind and near misses, and the check's configuration. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NO_FINDINGS } from "../../../src/guardrails/check-types.js";
import { compileSecretsCheck, SECRET_KINDS } from "../../../src/guardrails/checks/secrets.js";
import { corpus, texts } from "./corpus.js";

interface SecretsCorpus {
  found: { name: string; kind: string; before: string; secret: string[]; after: string }[];
  ignored: { name: string; text: string[] }[];
}

const { found, ignored } = corpus<SecretsCorpus>("secrets");
const check = compileSecretsCheck({ type: "secrets" });

for (const { name, kind, before, secret, after } of found) {
  test(`finds ${name}`, () => {
    const whole = secret.join("");
    const text = before + whole + after;
    const findings = check.scan(text);
    assert.deepEqual(texts(text, findings), [whole]);
    assert.equal(findings[0]?.kind, kind);
  });
}

for (const { name, text } of ignored) {
  test(`ignores ${name}`, () => {
    const whole = text.join("");
    assert.deepEqual(texts(whole, check.scan(whole)), []);
  });
}

test("has a corpus example of every kind it reports", () => {
  const covered = new Set(found.map((f) => f.kind));
  for (const { kind } of SECRET_KINDS) assert.ok(covered.has(kind), `no example of ${kind}`);
});

test("reports several secrets of one text in order", () => {
  const aws = found.find((f) => f.kind === "aws_access_key");
  const jwt = found.find((f) => f.kind === "jwt");
  assert.ok(aws !== undefined && jwt !== undefined);
  const text = `id ${aws.secret.join("")} then ${jwt.secret.join("")} end`;
  assert.deepEqual(
    check.scan(text).map((f) => f.kind),
    ["aws_access_key", "jwt"],
  );
});

test("answers the shared empty result for a text with no secrets", () => {
  assert.equal(check.scan("The deploy uses the key from the vault, not one pasted here."), NO_FINDINGS);
});

test("refuses settings, having none", () => {
  assert.throws(() => compileSecretsCheck({ type: "secrets", kinds: ["jwt"] } as never), /check\.kinds: unknown setting of a secrets check/);
});
