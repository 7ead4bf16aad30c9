/** How one client's views from several nodes become node_states and the reported state. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ClientStateSchema, McpClientSchema } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import type { ClientStateName } from "../../src/mcp/client-state.js";
import { enumInputNumber } from "../../src/proto-json/enum-names.js";
import { withNodeStates } from "../../src/services/mcp-node-states.js";

const at = new Date("2026-11-26T12:00:00Z");

function stateNumber(name: ClientStateName): number {
  const n = enumInputNumber(ClientStateSchema, name);
  assert.ok(n !== undefined);
  return n;
}

function views(entries: Record<string, ClientStateName>) {
  return new Map(Object.entries(entries).map(([node, state]) => [node, { state, lastFailure: null, toolsCount: 2, updatedAt: at }] as const));
}

function listed(own: ClientStateName, others: Record<string, ClientStateName> | undefined) {
  const client = create(McpClientSchema, { clientId: "c", state: stateNumber(own) });
  return withNodeStates(client, { state: own }, "self", others === undefined ? undefined : views(others), 2);
}

test("reports degraded with every node's state when healthy and unstable nodes disagree", () => {
  const client = listed("healthy", { a: "healthy", b: "unstable" });
  assert.equal(client.state, stateNumber("degraded"));
  assert.deepEqual(Object.keys(client.nodeStates).sort(), ["a", "b", "self"]);
  assert.equal(client.nodeStates["b"]?.state, stateNumber("unstable"));
  assert.equal(client.nodeStates["self"]?.toolsCount, 2);
});

test("keeps the node's own state when every node agrees", () => {
  const client = listed("unstable", { a: "unstable" });
  assert.equal(client.state, stateNumber("unstable"));
  assert.equal(Object.keys(client.nodeStates).length, 2);
});

test("does not call a disagreement outside healthy, unstable and pending_verification degraded", () => {
  assert.equal(listed("healthy", { a: "needs_reauth" }).state, stateNumber("healthy"));
});

test("reports a disabled client as disabled on every node, whatever their connections last saw", () => {
  const client = listed("disabled", { a: "healthy" });
  assert.equal(client.state, stateNumber("disabled"));
  assert.equal(client.nodeStates["a"]?.state, stateNumber("disabled"));
});

test("leaves node_states out while this node is the only live one", () => {
  assert.deepEqual(listed("healthy", undefined).nodeStates, {});
  assert.deepEqual(listed("healthy", {}).nodeStates, {});
});
