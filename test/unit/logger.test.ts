/**
 * The structured logger: each line's ISO-8601 time (formatted once per millisecond) and the batched
 * destination that stdout is written through, which must still write a lone line without waiting for a
 * batch to fill.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { batchedDestination, createLogger, mayHoldRedacted, unredactedLogger } from "../../src/telemetry/logger.js";

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

test("writes a lone line to the batched destination without waiting for a batch to fill", async () => {
  const dir = await mkdtemp(join(tmpdir(), "gw-logger-"));
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
    // sonic-boom's end takes no callback: it closes the file, then says so.
    await new Promise<void>((resolve) => {
      destination.once("close", () => resolve());
      destination.end();
    });
    await rm(dir, { recursive: true, force: true });
  }
});

test("writes a line through the unredacted logger as its logger writes it", () => {
  const { lines, logger } = capturing();
  const line = { path: "/v1/chat/completions", method: "POST", status: 200, duration_ms: 1.5, dims: { team: "a" } };
  logger.info(line, "request");
  unredactedLogger(logger).info(line, "request");
  const [redacting, unredacted] = lines.map(({ time: _time, ...rest }) => rest);
  assert.deepEqual(unredacted, redacting);
  assert.deepEqual(unredacted?.["dims"], { team: "a" });
});

test("names an object holding a field the redaction censors, and passes one that holds none", () => {
  assert.equal(mayHoldRedacted({ team: "a", value: "x" }), true);
  assert.equal(mayHoldRedacted({ authorization: "x" }), true);
  assert.equal(mayHoldRedacted({ team: "a", env: "prod" }), false);
  assert.equal(mayHoldRedacted({}), false);
});
