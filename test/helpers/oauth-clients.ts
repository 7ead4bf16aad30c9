/** Helpers of the upstream OAuth tests: an app with an OAuth fixture per suite, connecting an oauth client end to end, running one of its tools. */
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { api, startApp, type TestApp, type TestAppOptions } from "./app.js";
import { startOauthFixture, type OauthFixture, type OauthFixtureOptions } from "../fixtures/oauth-server.js";

/** Runs a tool with no arguments through POST /v1/mcp/tool/execute. */
export function executeTool(app: TestApp, name: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name, arguments: "{}" } });
}

/** Creates an oauth client for the fixture's MCP server, gives consent and completes; returns the creation answer. */
export async function connectOauthClient(app: TestApp, oauth: OauthFixture, name: string, extra: Record<string, unknown> = {}) {
  const created = await api(app, "POST", "/api/mcp/client", { name, connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"], ...extra });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const callback = await oauth.approve(created.body.authorize_url);
  assert.equal(callback.status, 302);
  const done = await api(app, "POST", created.body.complete_url);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  return created.body;
}

/** Starts an app and an OAuth fixture before a suite's tests and stops both after them. */
export function oauthSuite(appOptions: TestAppOptions = {}, fixtureOptions: OauthFixtureOptions = {}): { readonly app: TestApp; readonly oauth: OauthFixture } {
  const held: { app?: TestApp; oauth?: OauthFixture } = {};
  before(async () => {
    held.app = await startApp(appOptions);
    held.oauth = await startOauthFixture(fixtureOptions);
  });
  after(async () => {
    await held.app?.stop();
    await held.oauth?.close();
  });
  return {
    get app() {
      if (!held.app) throw new Error("the suite has not started");
      return held.app;
    },
    get oauth() {
      if (!held.oauth) throw new Error("the suite has not started");
      return held.oauth;
    },
  };
}
