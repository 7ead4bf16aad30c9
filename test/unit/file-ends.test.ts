/** How the lanes learn a test file's process end from node's runner, and which files they run again. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { compileFile } from "../compiled-tree.js";
import { readFileEnds } from "../file-ends.js";

const run = promisify(execFile);
const NONE = new Set<string>();
const line = (value: object): string => `${JSON.stringify(value)}\n`;

test("names a file a signal ended before its tests and runs it again when nothing else failed", () => {
  const ends = readFileEnds(line({ file: "/t/a.test.js", code: null, signal: "SIGKILL", reported: 0 }) + line({ otherFailures: 0 }), basename, NONE);
  assert.deepEqual(ends.lines, ["== a.test.js: its process was ended by SIGKILL after 0 of its tests reported\n"]);
  assert.deepEqual(ends.again, ["a.test.js"]);
});

test("runs nothing again when a test failed beside the killed file", () => {
  const ends = readFileEnds(line({ file: "/t/a.test.js", code: null, signal: "SIGKILL", reported: 0 }) + line({ otherFailures: 1 }), basename, NONE);
  assert.equal(ends.lines.length, 1);
  assert.deepEqual(ends.again, []);
});

test("runs nothing again when a file exited with a code of its own", () => {
  const text = line({ file: "/t/a.test.js", code: null, signal: "SIGKILL", reported: 0 }) + line({ file: "/t/b.test.js", code: 1, signal: null, reported: 0 }) + line({ otherFailures: 0 });
  const ends = readFileEnds(text, basename, NONE);
  assert.deepEqual(ends.lines[1], "== b.test.js: its process exited with code 1 after 0 of its tests reported\n");
  assert.deepEqual(ends.again, []);
});

test("runs nothing again when a signal ended a file after its tests began", () => {
  const ends = readFileEnds(line({ file: "/t/a.test.js", code: null, signal: "SIGSEGV", reported: 2 }) + line({ otherFailures: 0 }), basename, NONE);
  assert.deepEqual(ends.again, []);
});

test("never runs again a file the watchdog stopped as hung", () => {
  const ends = readFileEnds(line({ file: "/t/a.test.js", code: null, signal: "SIGKILL", reported: 0 }) + line({ otherFailures: 0 }), basename, new Set(["a.test.js"]));
  assert.deepEqual(ends.again, []);
});

test("the reporter tells node's runner's process ends and counts other failures apart", async () => {
  const dir = await mkdtemp(join(tmpdir(), "gw-file-ends-"));
  try {
    await writeFile(join(dir, "killed.test.mjs"), `process.kill(process.pid, "SIGKILL");\n`);
    await writeFile(join(dir, "exits.test.mjs"), `import { test } from "node:test";\ntest("passes", () => {});\nsetTimeout(() => process.exit(3), 50);\n`);
    await writeFile(join(dir, "fails.test.mjs"), `import { test } from "node:test";\ntest("fails", () => { throw new Error("no"); });\ntest("passes", () => {});\n`);
    const reporter = await compileFile(join(import.meta.dirname, "../file-ends-reporter.ts"), dir);
    const args = ["--test", `--test-reporter=${reporter}`, "--test-reporter-destination=stdout"];
    for (const file of ["killed.test.mjs", "exits.test.mjs", "fails.test.mjs"]) args.push(join(dir, file));
    // Without the variable that tells a process it runs under a test runner, which would make this one report to ours.
    const env = { ...process.env, NODE_TEST_CONTEXT: undefined };
    const { stdout } = await run(process.execPath, args, { env }).catch((err: { stdout: string }) => err);
    const ends = readFileEnds(stdout, basename, NONE);
    assert.deepEqual([...ends.lines].sort(), [
      "== exits.test.mjs: its process exited with code 3 after 1 of its tests reported\n",
      "== killed.test.mjs: its process was ended by SIGKILL after 0 of its tests reported\n",
    ]);
    assert.deepEqual(ends.again, [], "the failing test stops the killed file from running again");
    assert.match(stdout, /"otherFailures":1/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
