/** Listening beyond loopback with admin auth off: a warning at start, or a boot error with requireAuth. */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { createApp } from "../../src/app.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { startApp, type TestApp } from "../helpers/app.js";

let app: TestApp | undefined;
after(() => app?.stop());

test("a non-loopback listen address with admin auth off starts with a warning naming the risk", async () => {
  app = await startApp({ host: "0.0.0.0" });
  const warning = app.logLines.map((line) => JSON.parse(line) as { level: number; msg: string }).find((line) => line.level === 40 && /not a loopback address/.test(line.msg));
  assert.ok(warning, "a WARN line names the open admin API");
  assert.match(warning.msg, /with admin authentication off: anyone who can reach the port can read and change/);
});

test("requireAuth makes a non-loopback listen address with admin auth off a boot error", async () => {
  await assert.rejects(
    createApp({ dataDir: "/nonexistent/never-opened", host: "0.0.0.0", port: 0, requireAuth: true, logger: createLogger({ level: "silent" }) }),
    /not a loopback address, with admin authentication off.*refused: --require-auth/,
  );
});
