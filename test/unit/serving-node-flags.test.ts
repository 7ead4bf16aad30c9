/**
 * The node flags a serving gateway needs on its command line (SERVING_NODE_FLAGS) are written out in three
 * places a user starts it from: `npm start`, the Dockerfile and the README's systemd unit. Each must give
 * them, in order, right before `dist/main.js`.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { SERVING_NODE_FLAGS } from "../../src/v8-flags.js";

const ROOT = new URL("../../", import.meta.url);
const read = (file: string): Promise<string> => readFile(new URL(file, ROOT), "utf8");
const SPACED = ["node", ...SERVING_NODE_FLAGS, "dist/main.js"].join(" ");

test("serves with at least one flag V8 reads only from the command line", () => {
  assert.ok(SERVING_NODE_FLAGS.length > 0);
  for (const flag of SERVING_NODE_FLAGS) assert.match(flag, /^--[a-z-]+(=\S+)?$/);
});

test("npm start runs node with the serving flags before dist/main.js", async () => {
  const manifest = JSON.parse(await read("package.json")) as { scripts: Record<string, string> };
  assert.equal(manifest.scripts["start"], `exec ${SPACED}`);
});

test("the Dockerfile's command runs node with the serving flags before dist/main.js", async () => {
  const command = /^CMD (\[.*\])$/m.exec(await read("Dockerfile"))?.[1];
  assert.ok(command, "the Dockerfile has a CMD in exec form");
  assert.deepEqual((JSON.parse(command) as string[]).slice(0, SERVING_NODE_FLAGS.length + 2), ["node", ...SERVING_NODE_FLAGS, "dist/main.js"]);
});

test("the README's systemd unit runs node with the serving flags before dist/main.js", async () => {
  const execStart = /^ExecStart=(.*)$/m.exec(await read("README.md"))?.[1];
  assert.ok(execStart, "the README has a systemd unit");
  assert.ok(execStart.startsWith(`/usr/bin/${SPACED} `), execStart);
});
