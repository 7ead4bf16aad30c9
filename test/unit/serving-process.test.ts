/**
 * What a serving gateway needs before it starts, on node's command line (SERVING_NODE_FLAGS) and in its
 * environment (SERVING_ENVIRONMENT), is written out in the three places a user starts it from: `npm start`,
 * the Dockerfile and the systemd unit in docs/operations.md. Each must give all of it, the flags right before
 * `dist/main.js`.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { SERVING_ENVIRONMENT, SERVING_NODE_FLAGS } from "../../src/serving-environment.js";

const ROOT = new URL("../../", import.meta.url);
const read = (file: string): Promise<string> => readFile(new URL(file, ROOT), "utf8");
const COMMAND = ["node", ...SERVING_NODE_FLAGS, "dist/main.js"];
const ASSIGNMENTS = Object.entries(SERVING_ENVIRONMENT).map(([name, value]) => `${name}=${value}`);

test("serves with node flags and environment settings the process cannot apply itself", () => {
  assert.ok(SERVING_NODE_FLAGS.length > 0 && ASSIGNMENTS.length > 0);
  for (const flag of SERVING_NODE_FLAGS) assert.match(flag, /^--[a-z-]+(=\S+)?$/);
  for (const assignment of ASSIGNMENTS) assert.match(assignment, /^[A-Z_]+=\S+$/);
});

test("npm start runs node with the serving environment and flags before dist/main.js", async () => {
  const manifest = JSON.parse(await read("package.json")) as { scripts: Record<string, string> };
  assert.equal(manifest.scripts["start"], ["exec", "env", ...ASSIGNMENTS, ...COMMAND].join(" "));
});

test("the Dockerfile sets the serving environment and its command runs node with the serving flags", async () => {
  const dockerfile = await read("Dockerfile");
  for (const assignment of ASSIGNMENTS) assert.match(dockerfile, new RegExp(`^ENV ${assignment}$`, "m"));
  const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
  assert.ok(command, "the Dockerfile has a CMD in exec form");
  assert.deepEqual((JSON.parse(command) as string[]).slice(0, COMMAND.length), COMMAND);
});

test("the systemd unit in docs/operations.md sets the serving environment and runs node with the serving flags", async () => {
  const page = await read("docs/operations.md");
  const execStart = /^ExecStart=(.*)$/m.exec(page)?.[1];
  assert.ok(execStart, "docs/operations.md has a systemd unit");
  assert.ok(execStart.startsWith(`/usr/bin/${COMMAND.join(" ")} `), execStart);
  for (const assignment of ASSIGNMENTS) assert.match(page, new RegExp(`^Environment=${assignment}$`, "m"));
});
