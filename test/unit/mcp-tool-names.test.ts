import assert from "node:assert/strict";
import { test } from "node:test";
import { prefixedToolName, splitToolName, toolAllowed, toolAutoExecutable } from "../../src/mcp/tool-names.js";

test("prefixes a tool with its client name and a hyphen", () => {
  assert.equal(prefixedToolName("docs", "search"), "docs-search");
});

test("splits on the first hyphen so tool names may contain hyphens", () => {
  assert.deepEqual(splitToolName("docs-get-page"), { client: "docs", tool: "get-page" });
});

test("refuses a name without a hyphen or with an empty side", () => {
  assert.equal(splitToolName("docs"), null);
  assert.equal(splitToolName("-tool"), null);
  assert.equal(splitToolName("docs-"), null);
});

test("[\"*\"] allows every tool, [] none, a list only its names", () => {
  assert.ok(toolAllowed(["*"], "anything"));
  assert.ok(!toolAllowed([], "anything"));
  assert.ok(toolAllowed(["a", "b"], "b"));
  assert.ok(!toolAllowed(["a"], "b"));
});

test("a tool only in tools_to_auto_execute is not auto-executable", () => {
  assert.ok(!toolAutoExecutable({ toolsToExecute: ["a"], toolsToAutoExecute: ["b"] }, "b"));
  assert.ok(toolAutoExecutable({ toolsToExecute: ["*"], toolsToAutoExecute: ["b"] }, "b"));
  assert.ok(!toolAutoExecutable({ toolsToExecute: ["*"], toolsToAutoExecute: [] }, "b"));
});
