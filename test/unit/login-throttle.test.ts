import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { LoginThrottle } from "../../src/services/login-throttle.js";

function refused(throttle: LoginThrottle, address: string): GatewayError | undefined {
  try {
    throttle.check(address);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
}

test("an address is refused after the limit of failures and admitted again once the window passes", () => {
  let now = 1_000_000;
  const throttle = new LoginThrottle(3, 10_000, () => now);
  for (let i = 0; i < 3; i++) {
    assert.equal(refused(throttle, "a"), undefined);
    throttle.fail("a");
  }
  const err = refused(throttle, "a");
  assert.equal(err?.code, "resource_exhausted");
  assert.equal(err?.retryAfterSeconds, 10);
  now += 4_000;
  assert.equal(refused(throttle, "a")?.retryAfterSeconds, 6);
  now += 6_000;
  assert.equal(refused(throttle, "a"), undefined);
});

test("failures from one address do not throttle another", () => {
  const throttle = new LoginThrottle(1, 10_000, () => 0);
  throttle.fail("a");
  assert.ok(refused(throttle, "a"));
  assert.equal(refused(throttle, "b"), undefined);
});

test("the table of addresses stays bounded under a flood of distinct addresses", () => {
  const throttle = new LoginThrottle(5, 60_000, () => 0);
  for (let i = 0; i < 25_000; i++) throttle.fail(`10.0.${i >> 8}.${i & 255}:${i}`);
  assert.ok(throttle.size <= 10_000, `size ${throttle.size}`);
});
