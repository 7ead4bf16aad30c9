import assert from "node:assert/strict";
import { test } from "node:test";
import { sentCredentials, withoutCredentials } from "../../src/providers/http/sent-credentials.js";

test("a bearer token, an api-key header and a key query parameter are blanked out of upstream text", () => {
  const credentials = sentCredentials(
    { authorization: "Bearer sk-live-123456789", "x-api-key": "anthropic-key-abcdef", "content-type": "application/json" },
    "https://generativelanguage.googleapis.com/v1beta/models/x:generateContent?key=AIzaSecretValue1",
  );
  const text = "bad key sk-live-123456789; also anthropic-key-abcdef and AIzaSecretValue1 in application/json";
  assert.equal(withoutCredentials(text, credentials), "bad key <redacted>; also <redacted> and <redacted> in application/json");
});

test("short header values are not treated as credentials", () => {
  assert.deepEqual(sentCredentials({ "x-auth-mode": "on" }, "http://127.0.0.1/"), []);
});
