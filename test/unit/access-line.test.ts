/**
 * The access line: written by hand to the logger's destination, it must read exactly as the line pino
 * writes for the same fields, and a line that could hold a censored field must still be redacted.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { accessLogOf, type AccessLineFields } from "../../src/telemetry/access-line.js";
import { createLogger } from "../../src/telemetry/logger.js";

/** A logger whose lines are kept as text in `lines`. */
function capturing(level = "info"): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString("utf8").split("\n")) if (text !== "") lines.push(text);
      done();
    },
  });
  return { lines, logger: createLogger({ level, destination }) };
}

/** A line's fields without its time, which differs between two lines. */
function untimed(text: string | undefined): Record<string, unknown> {
  const { time: _time, ...rest } = JSON.parse(text ?? "null") as Record<string, unknown>;
  return rest;
}

const FIELDS: AccessLineFields = { path: "/v1/chat/completions", method: "POST", status: 200, duration_ms: 1.5, dims: { team: "a\"b" } };

test("writes the line pino writes for the same fields", () => {
  const { lines, logger } = capturing();
  logger.info(FIELDS, "request");
  accessLogOf(logger)("info", FIELDS);
  assert.equal(lines.length, 2);
  assert.deepEqual(untimed(lines[1]), untimed(lines[0]));
  assert.deepEqual(Object.keys(untimed(lines[1])), Object.keys(untimed(lines[0])));
});

test("writes a traced request's trace and span ids", () => {
  const { lines, logger } = capturing();
  const traced = { ...FIELDS, trace_id: "0af7651916cd43dd8448eb211c80319c", span_id: "b7ad6b7169203331" };
  logger.info(traced, "request");
  accessLogOf(logger)("info", traced);
  assert.deepEqual(untimed(lines[1]), untimed(lines[0]));
});

test("writes a debug line at pino's debug level", () => {
  const { lines, logger } = capturing("debug");
  accessLogOf(logger)("debug", { ...FIELDS, dims: {} });
  assert.equal(untimed(lines[0])["level"], 20);
  assert.deepEqual(untimed(lines[0])["dims"], {});
});

test("writes a child logger's line through pino, with the child's bindings", () => {
  const { lines, logger } = capturing();
  const child = logger.child({ node: "gw-1" });
  child.info(FIELDS, "request");
  accessLogOf(child)("info", FIELDS);
  // A child is not a logger createLogger made: its line goes through pino, with the same fields.
  assert.deepEqual(untimed(lines[1]), untimed(lines[0]));
  assert.equal(untimed(lines[1])["node"], "gw-1");
});

test("redacts a dimension named like a censored field", () => {
  const { lines, logger } = capturing();
  accessLogOf(logger)("info", { ...FIELDS, dims: { value: "secret" } });
  assert.deepEqual(untimed(lines[0])["dims"], { value: "[redacted]" });
});

test("writes through a logger that createLogger did not make", () => {
  const lines: string[] = [];
  const logger = pino({ base: null, timestamp: false }, { write: (text: string) => void lines.push(text.trim()) });
  accessLogOf(logger)("info", FIELDS);
  assert.deepEqual(JSON.parse(lines[0] ?? "null"), { level: 30, ...FIELDS, msg: "request" });
});
