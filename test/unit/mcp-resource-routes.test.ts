/** Which member of a virtual MCP server a resource URI goes to: the one that listed it, else the one whose template it fits. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ResourceRoutes } from "../../src/mcp/relay/resource-routes.js";

describe("resource routes", () => {
  test("a listed URI goes to the member that listed it", () => {
    const routes = new ResourceRoutes();
    routes.claim("test://a", "docs");
    assert.equal(routes.ownerOf("test://a"), "docs");
  });

  test("a URI listed by a second member stays the first's", () => {
    const routes = new ResourceRoutes();
    assert.equal(routes.claim("test://a", "crm"), true);
    assert.equal(routes.claim("test://a", "docs"), false);
    assert.equal(routes.ownerOf("test://a"), "crm");
  });

  test("a URI that fits a template goes to the template's member, its literal parts matched exactly", () => {
    const routes = new ResourceRoutes();
    routes.setTemplates("crm", ["crm://customers/{id}.json"]);
    assert.equal(routes.ownerOf("crm://customers/42.json"), "crm");
    assert.equal(routes.ownerOf("crm://customers/42xjson"), undefined);
  });

  test("a released member's URIs go to no one until it lists them again", () => {
    const routes = new ResourceRoutes();
    routes.claim("test://a", "docs");
    routes.release(["docs"]);
    assert.equal(routes.ownerOf("test://a"), undefined);
  });

  test("an update of a URI another member lists is not that member's to tell", () => {
    const routes = new ResourceRoutes();
    routes.claim("test://a", "crm");
    assert.equal(routes.tells("test://a", "docs"), false);
    assert.equal(routes.tells("test://a", "crm"), true);
    assert.equal(routes.tells("test://unlisted", "docs"), true);
  });
});
