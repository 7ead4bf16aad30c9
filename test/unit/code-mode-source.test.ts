import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { calledTools } from "../../src/mcp/code-mode/code-source.js";

const CLIENTS = new Set(["docs", "crm"]);

describe("reading the tool calls of code-mode code", () => {
  test("finds every <client>.<tool>( call, with dotted and string-literal members", () => {
    assert.deepEqual(calledTools('await docs.add({});\nconst r = await crm["get-user"]({ id: 1 });', CLIENTS), {
      calls: [
        { client: "crm", tool: "get-user" },
        { client: "docs", tool: "add" },
      ],
      dynamic: false,
    });
  });

  test("a computed member on a client object is dynamic", () => {
    assert.equal((calledTools('const t = "add"; await docs[t]({})', CLIENTS) as { dynamic: boolean }).dynamic, true);
  });

  test("a client object passed around is dynamic", () => {
    assert.equal((calledTools("const d = docs; await d.add({})", CLIENTS) as { dynamic: boolean }).dynamic, true);
  });

  test("a tool method taken without calling it is dynamic", () => {
    assert.equal((calledTools("const add = docs.add; await add({})", CLIENTS) as { dynamic: boolean }).dynamic, true);
  });

  test("a property or key that only shares a client's name is not a call", () => {
    assert.deepEqual(calledTools("const x = { docs: 1 }; x.docs + 1", CLIENTS), { calls: [], dynamic: false });
  });

  test("code that does not parse is a syntax error naming the line", () => {
    assert.deepEqual(calledTools("const a = 1;\nconst = 2;", CLIENTS), { kind: "error", message: "SyntaxError: Unexpected token (line 2)" });
  });
});
