import assert from "node:assert/strict";
import { test } from "node:test";
import { StateRegistry } from "../../src/mcp/state-registry.js";

test("a failure records stage, a collapsed message, at and since", () => {
  const states = new StateRegistry();
  states.failed("c", "ping", new Error("connection\n   refused\t by peer"));
  const view = states.stateOf("c");
  assert.equal(view?.state, "unstable");
  assert.equal(view?.lastFailure?.stage, "ping");
  assert.equal(view?.lastFailure?.message, "connection refused by peer");
  assert.equal(view?.lastFailure?.at.getTime(), view?.lastFailure?.since.getTime());
});

test("last_failure.message is at most 512 characters", () => {
  const states = new StateRegistry();
  states.failed("c", "connect", new Error("x".repeat(5_000)));
  assert.equal(states.stateOf("c")?.lastFailure?.message.length, 512);
});

test("since stays at the first failure of an unhealthy run while at moves on", async () => {
  const states = new StateRegistry();
  const first = states.failed("c", "ping", new Error("a"));
  await new Promise((r) => setTimeout(r, 5));
  const second = states.failed("c", "connect", new Error("b"));
  assert.equal(second.since.getTime(), first.since.getTime());
  assert.ok(second.at.getTime() > first.at.getTime());
});

test("the first passing check clears last_failure and a new run starts a new since", async () => {
  const states = new StateRegistry();
  const first = states.failed("c", "ping", new Error("a"));
  states.succeeded("c");
  assert.deepEqual(states.stateOf("c"), { state: "healthy" });
  await new Promise((r) => setTimeout(r, 5));
  const next = states.failed("c", "ping", new Error("b"));
  assert.ok(next.since.getTime() > first.since.getTime());
});
