/**
 * The structured logger: each line's ISO-8601 time (formatted once per millisecond, its date and time of day
 * once per second) and the batched destination that stdout is written through, which must still write a lone
 * line without waiting for a batch to fill, keep the order of many batches, and write what it holds when the
 * process exits.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { batchedDestination, createLogger, mayHoldRedacted, TimeField } from "../../src/telemetry/logger.js";

/** A logger whose lines are parsed into `lines`. */
function capturing(): { lines: Array<Record<string, unknown>>; logger: ReturnType<typeof createLogger> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString("utf8").split("\n")) if (text !== "") lines.push(JSON.parse(text) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination }) };
}

/** Runs `body` with a fresh temporary folder, removed afterwards. */
async function inTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "gw-logger-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Ends a batched destination and resolves once its file is closed. */
function closed(destination: ReturnType<typeof batchedDestination>): Promise<void> {
  return new Promise((resolve) => destination.end(resolve));
}

test("stamps a line with the time it was logged, in ISO-8601", () => {
  const { lines, logger } = capturing();
  const before = Date.now();
  logger.info("now");
  const after = Date.now();
  const time = lines[0]?.["time"];
  assert.equal(typeof time, "string");
  assert.match(time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const stamped = Date.parse(time as string);
  assert.ok(stamped >= before && stamped <= after, `${String(time)} is outside [${before}, ${after}]`);
});

test("stamps a line logged in a later millisecond with the later time", async () => {
  const { lines, logger } = capturing();
  logger.info("first");
  const first = Date.now();
  while (Date.now() === first) await sleep(1);
  logger.info("second");
  const [a, b] = lines.map((line) => Date.parse(line["time"] as string));
  assert.ok(a !== undefined && b !== undefined && b > a, `times ${String(a)} and ${String(b)}`);
});

test("formats each millisecond as Date#toISOString does, across seconds, days and a clock set back", () => {
  const field = new TimeField();
  const start = Date.UTC(2026, 11, 31, 23, 59, 59, 990);
  const times = [start, start, start + 9, start + 10, start + 11, start + 1010, start - 1, start - 1000, Date.UTC(1999, 0, 1), Date.UTC(2026, 5, 1, 12, 0, 0, 7)];
  for (let i = 0; i < 3000; i++) times.push(start + i * 7);
  for (const time of times) assert.equal(field.at(time), `,"time":"${new Date(time).toISOString()}"`, `at ${time}`);
});

test("writes a lone line to the batched destination without waiting for a batch to fill", () =>
  inTempDir(async (dir) => {
    const file = join(dir, "gateway.log");
    const destination = batchedDestination(file);
    try {
      const logger = createLogger({ level: "info", destination });
      logger.info({ path: "/v1/models" }, "request");
      let text = "";
      // Bounded: the flush interval is a tenth of a second; five seconds is a stuck line, not a slow one.
      for (let tries = 0; tries < 100 && !text.includes('"msg":"request"'); tries++) {
        await sleep(50);
        text = await readFile(file, "utf8").catch(() => "");
      }
      assert.match(text, /"path":"\/v1\/models".*"msg":"request"/);
    } finally {
      await closed(destination);
    }
  }));

test("names an object holding a field the redaction censors, and passes one that holds none", () => {
  assert.equal(mayHoldRedacted({ team: "a", value: "x" }), true);
  assert.equal(mayHoldRedacted({ authorization: "x" }), true);
  assert.equal(mayHoldRedacted({ team: "a", env: "prod" }), false);
  assert.equal(mayHoldRedacted({}), false);
});

test("writes every line of many batches, in order, before it closes", () =>
  inTempDir(async (dir) => {
    const file = join(dir, "gateway.log");
    const destination = batchedDestination(file);
    const logger = createLogger({ level: "info", destination });
    for (let n = 0; n < 2000; n++) logger.info({ n }, "line");
    await closed(destination);
    assert.deepEqual(await numbersIn(file), Array.from({ length: 2000 }, (_, n) => n));
  }));

test("writes the lines still gathered when the process exits", () =>
  inTempDir(async (dir) => {
    const file = join(dir, "gateway.log");
    // A child that logs three lines and exits at once, long before a batch would be written.
    const script = `
      import { batchedDestination, createLogger } from ${JSON.stringify(new URL("../../src/telemetry/logger.ts", import.meta.url).href)};
      const destination = batchedDestination(${JSON.stringify(file)});
      destination.write("");
      await new Promise((resolve) => setTimeout(resolve, 200));
      const logger = createLogger({ level: "info", destination });
      for (const n of [1, 2, 3]) logger.info({ n }, "line");
      process.exit(0);
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 0, stderr);
    assert.deepEqual(await numbersIn(file), [1, 2, 3]);
  }));

test("serves any number of destinations with one exit listener", () =>
  inTempDir(async (dir) => {
    const before = process.listenerCount("exit");
    const destinations = Array.from({ length: 12 }, (_, n) => batchedDestination(join(dir, `${n}.log`)));
    try {
      assert.ok(process.listenerCount("exit") <= before + 1, `${process.listenerCount("exit") - before} exit listeners added`);
    } finally {
      await Promise.all(destinations.map(closed));
    }
  }));

/** The `n` field of each line in a log file, in order. */
async function numbersIn(file: string): Promise<number[]> {
  return (await readFile(file, "utf8"))
    .split("\n")
    .filter((text) => text !== "")
    .map((text) => (JSON.parse(text) as { n: number }).n);
}
