/** The gateway's cookies: reading one from a Cookie header and writing the Set-Cookie of a browser cookie. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { browserCookie, cookieValue, sessionCookie } from "../../src/services/sso/sso-login.js";

test("reads one cookie among others", () => {
  assert.equal(cookieValue("theme=dark; gw_session=abc-_9; other=1", "gw_session"), "abc-_9");
});

test("answers null when the header lacks the cookie or is absent", () => {
  assert.equal(cookieValue("theme=dark", "gw_session"), null);
  assert.equal(cookieValue(undefined, "gw_session"), null);
});

test("does not take a cookie whose name only ends with the one asked for", () => {
  assert.equal(cookieValue("x_gw_session=forged", "gw_session"), null);
});

test("writes an HttpOnly SameSite=Lax cookie for the whole gateway, Secure only over TLS", () => {
  const plain = browserCookie("gw_flow_browser", "v1", 600, false);
  assert.match(plain, /^gw_flow_browser=v1; /);
  for (const part of ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=600"]) assert.ok(plain.split("; ").includes(part), `${part} missing from ${plain}`);
  assert.ok(!plain.includes("Secure"));
  assert.ok(browserCookie("gw_flow_browser", "v1", 600, true).split("; ").includes("Secure"));
});

test("clears the session cookie with an empty value and Max-Age 0", () => {
  const cleared = sessionCookie("", 0, false);
  assert.match(cleared, /^gw_session=; /);
  assert.ok(cleared.split("; ").includes("Max-Age=0"));
});
