/**
 * The pieces of the tool guardrail stages that need no server: where a call's, a result's and a
 * definition's texts are, how a definition is pinned, how a client's tools are screened against their pins,
 * and the config file's tool_pinning.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { textsOf, writeTexts } from "../../src/guardrails/content-texts.js";
import { definitionHash, PIN_CHANGED } from "../../src/mcp/tool-guardrails/tool-pins.js";
import { ToolScreens, visibleTools, type ToolScreenDeps } from "../../src/mcp/tool-guardrails/tool-screens.js";
import { walkArguments, walkDescriptions, walkResult } from "../../src/mcp/tool-guardrails/tool-texts.js";
import type { DiscoveredTool } from "../../src/mcp/upstream-session.js";
import { createLogger } from "../../src/telemetry/logger.js";

const TOOL: DiscoveredTool = { name: "notes", description: "Reads notes", inputSchema: { type: "object", properties: { topic: { type: "string", description: "Which notes" } } } };

describe("tool texts", () => {
  test("a call's texts are its string values at any depth, in document order, never its keys", () => {
    const args = { to: "ana@example.com", cc: ["bob@example.com", { bcc: "eve@example.com", n: 3 }], flag: true };
    assert.deepEqual(textsOf((visit) => walkArguments(args, visit)), ["ana@example.com", "bob@example.com", "eve@example.com"]);
  });

  test("texts written back land in the places they were read from", () => {
    const args = { to: "a", cc: ["b", { bcc: "c" }] };
    writeTexts((visit) => walkArguments(args, visit), ["A", "B", "C"]);
    assert.deepEqual(args, { to: "A", cc: ["B", { bcc: "C" }] });
  });

  test("a result's texts are its text blocks, embedded text resources and structuredContent strings", () => {
    const result = {
      content: [
        { type: "text", text: "one" },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        { type: "resource", resource: { uri: "file:///a", text: "two" } },
      ],
      structuredContent: { note: "three", list: ["four"] },
    };
    assert.deepEqual(textsOf((visit) => walkResult(result, visit)), ["one", "two", "three", "four"]);
  });

  test("a definition's texts are its description and its schema's description strings", () => {
    assert.deepEqual(textsOf((visit) => walkDescriptions(structuredClone(TOOL), visit)), ["Reads notes", "Which notes"]);
  });

  test("a nesting deeper than the call stack allows is walked", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.deepEqual(textsOf((visit) => walkArguments({ deep }, visit)), ["bottom"]);
  });
});

describe("pins", () => {
  test("a definition's hash does not depend on the order of its keys", () => {
    const reordered: DiscoveredTool = { inputSchema: { properties: { topic: { description: "Which notes", type: "string" } }, type: "object" }, description: "Reads notes", name: "notes" };
    assert.equal(definitionHash(reordered), definitionHash(TOOL));
  });

  test("a changed description changes the hash", () => {
    assert.notEqual(definitionHash({ ...TOOL, description: "Reads notes and mails them" }), definitionHash(TOOL));
  });
});

describe("screens", () => {
  function screens(stored: Record<string, string> = {}) {
    const writes: { pins: Record<string, string>; replace: boolean }[] = [];
    const changes: string[] = [];
    const deps: ToolScreenDeps = {
      logger: createLogger({ level: "silent" }),
      storePins: async (_id, pins, replace) => {
        writes.push({ pins, replace });
        Object.assign(stored, replace ? pins : { ...pins, ...stored });
        return { ...stored };
      },
      definitionChanged: (_client, tool) => changes.push(tool),
      changed: () => undefined,
    };
    return { screens: new ToolScreens(deps), writes, changes };
  }
  const target = (tools: DiscoveredTool[]) => ({ id: "c1", name: "docs", pinning: true, tools });

  test("a pinning client's first discovery pins every tool and quarantines none", async () => {
    const { screens: s, writes } = screens();
    await s.screen(target([TOOL]));
    assert.deepEqual(writes, [{ pins: { notes: definitionHash(TOOL) }, replace: false }]);
    assert.equal(s.of("c1").quarantined.size, 0);
  });

  test("a definition that no longer matches its pin is quarantined, reported once, and hidden", async () => {
    const { screens: s, changes } = screens();
    await s.screen(target([TOOL]));
    const changed = { ...TOOL, description: "Reads notes and mails them" };
    await s.screen(target([changed]));
    await s.screen(target([changed]));
    assert.equal(s.of("c1").quarantined.get("notes"), PIN_CHANGED);
    assert.deepEqual(changes, ["notes"]);
    assert.deepEqual(visibleTools([changed], s.of("c1")), []);
  });

  test("a pin another node stored first is the one compared with", async () => {
    const { screens: s } = screens({ notes: definitionHash({ ...TOOL, description: "an older definition" }) });
    await s.screen(target([TOOL]));
    assert.equal(s.of("c1").quarantined.get("notes"), PIN_CHANGED);
  });

  test("approving pins the current definition and releases the tool", async () => {
    const { screens: s, writes } = screens();
    await s.screen(target([TOOL]));
    const changed = { ...TOOL, description: "Reads notes and mails them" };
    await s.screen(target([changed]));
    assert.equal(await s.approve(target([changed]), "notes"), null);
    assert.deepEqual(writes.at(-1), { pins: { notes: definitionHash(changed) }, replace: true });
    assert.equal(s.of("c1").quarantined.size, 0);
  });

  test("a client that does not pin is not screened without guardrails", async () => {
    const { screens: s, writes } = screens();
    await s.screen({ ...target([TOOL]), pinning: false });
    assert.deepEqual(writes, []);
    assert.equal(s.of("c1").quarantined.size, 0);
  });
});

describe("config file", () => {
  const client = { name: "docs", connection_type: "http", connection_string: "http://127.0.0.1:9000/mcp" };

  test("an MCP client's tool_pinning is read", () => {
    const parsed = parseConfig({ mcp: { client_configs: [{ ...client, tool_pinning: true }] } }, {});
    assert.equal(parsed.mcp.clientConfigs[0]?.toolPinning, true);
  });

  test("a tool_pinning that is not a boolean is refused with its path", () => {
    assert.throws(() => parseConfig({ mcp: { client_configs: [{ ...client, tool_pinning: "yes" }] } }, {}), /mcp\.client_configs\[0\]\.tool_pinning/);
  });
});
