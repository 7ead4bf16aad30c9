/** The test runners' watchdog: a test file's process that runs past the limit is stopped and named; others are left alone. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { watchTestFiles } from "../file-watchdog.js";

/** A stand-in for node's test runner: a process with one child per file, each running `code`, that exits once they all have. */
function runner(files: Record<string, string>): ReturnType<typeof spawn> {
  const script = `
    const { spawn } = require("node:child_process");
    const files = ${JSON.stringify(files)};
    let left = Object.keys(files).length;
    for (const [file, code] of Object.entries(files)) {
      spawn(process.execPath, ["-e", code, file], { stdio: "ignore" }).on("close", () => { if (--left === 0) process.exit(0); });
    }`;
  return spawn(process.execPath, ["-e", script], { stdio: "ignore" });
}

test("stops a test file's process that runs past the limit and names its file", async () => {
  const lines: string[] = [];
  const child = runner({ "/tmp/hangs.test.js": "setInterval(() => {}, 1000)", "/tmp/quick.test.js": "setTimeout(() => {}, 100)" });
  watchTestFiles(child, { limitS: 1, everyMs: 200, report: (line) => lines.push(line) });
  await once(child, "close");
  assert.equal(lines.length, 1, lines.join(""));
  assert.match(lines[0] ?? "", /^== \/tmp\/hangs\.test\.js ran for more than 1 s: stopped it/);
});

test("leaves a run whose files all end within the limit alone", async () => {
  const lines: string[] = [];
  const child = runner({ "/tmp/a.test.js": "setTimeout(() => {}, 300)", "/tmp/b.test.js": "setTimeout(() => {}, 500)" });
  watchTestFiles(child, { limitS: 5, everyMs: 100, report: (line) => lines.push(line) });
  await once(child, "close");
  assert.deepEqual(lines, []);
});
