/** buf curl, the real gRPC tool, lists and calls the running gateway's services by reflection. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { startApp, type TestApp } from "../helpers/app.js";

const run = promisify(execFile);
const BUF = new URL("../../node_modules/.bin/buf", import.meta.url).pathname;

describe("gRPC reflection on the gateway", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp();
  });
  after(() => app.stop());

  test("buf curl --list-services lists the gw services", async () => {
    const { stdout } = await run(BUF, ["curl", "--http2-prior-knowledge", "--protocol", "grpc", "--list-services", app.url]);
    const services = stdout.trim().split("\n");
    for (const name of ["gw.admin.v1.McpClientService", "gw.admin.v1.SettingsService", "gw.admin.v1.SessionService"]) {
      assert.ok(services.includes(name), `${name} in ${stdout}`);
    }
  });

  test("buf curl calls ListMcpClients over gRPC by reflection", async () => {
    const { stdout } = await run(BUF, ["curl", "--http2-prior-knowledge", "--protocol", "grpc", "-d", "{}", `${app.url}/gw.admin.v1.McpClientService/ListMcpClients`]);
    const body = JSON.parse(stdout) as Record<string, unknown>;
    assert.ok(!("error" in body), stdout);
  });
});
