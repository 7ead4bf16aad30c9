import assert from "node:assert/strict";
import { test } from "node:test";
import { credentialFromHeaders } from "../../src/inference/credential.js";

/** A header reader over `headers` (lowercase names). */
function reader(headers: Record<string, string>): (name: string) => string | undefined {
  return (name) => headers[name];
}

test("reads the token of Authorization: Bearer <token>", () => {
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer sk-gw-1" })), "sk-gw-1");
});

test("reads a bearer token in another case and with more spacing", () => {
  assert.equal(credentialFromHeaders(reader({ authorization: "bearer \t sk-gw-1  " })), "sk-gw-1");
  assert.equal(credentialFromHeaders(reader({ authorization: "BEARER sk-gw-1" })), "sk-gw-1");
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer   sk-gw-1" })), "sk-gw-1");
});

test("takes no credential from an Authorization value of another scheme", () => {
  assert.equal(credentialFromHeaders(reader({ authorization: "Basic c2stZ3c=" })), null);
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer" })), null);
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearersk-gw-1" })), null);
});

test("prefers x-gw-vk to Authorization, and Authorization to x-api-key", () => {
  assert.equal(credentialFromHeaders(reader({ "x-gw-vk": "sk-a", authorization: "Bearer sk-b", "x-api-key": "sk-c" })), "sk-a");
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer sk-b", "x-api-key": "sk-c" })), "sk-b");
});

test("passes over an IdP bearer token to the next header", () => {
  const isIdp = (token: string) => token === "idp-token";
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer idp-token", "x-api-key": "sk-c" }), isIdp), "sk-c");
  assert.equal(credentialFromHeaders(reader({ authorization: "Bearer idp-token" }), isIdp), null);
});
