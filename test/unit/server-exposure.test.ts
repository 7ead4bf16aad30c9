import assert from "node:assert/strict";
import { test } from "node:test";
import { isLoopbackHost, unauthenticatedExposure } from "../../src/server/exposure.js";

test("loopback hosts are localhost, 127.0.0.0/8 and ::1 in their spellings", () => {
  for (const host of ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]) {
    assert.equal(isLoopbackHost(host), true, host);
  }
});

test("wildcard, private and named hosts are not loopback", () => {
  for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "gw.example.com", "::ffff:10.0.0.1", "128.0.0.1"]) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

test("the exposure risk is reported only for a non-loopback host with admin auth off", () => {
  assert.match(unauthenticatedExposure("0.0.0.0", false) ?? "", /0\.0\.0\.0.*admin authentication off.*auth_config\.is_enabled/);
  assert.equal(unauthenticatedExposure("0.0.0.0", true), null);
  assert.equal(unauthenticatedExposure("127.0.0.1", false), null);
});
