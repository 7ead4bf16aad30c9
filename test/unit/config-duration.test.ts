import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatDuration, parseDuration } from "../../src/config/duration.js";
import { GatewayError } from "../../src/errors.js";

function assertInvalid(text: string, fragment: string): void {
  assert.throws(
    () => parseDuration(text),
    (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, "invalid_argument");
      assert.ok(error.message.includes(`invalid duration "${text}"`), error.message);
      assert.ok(error.message.includes(fragment), error.message);
      return true;
    },
  );
}

describe("parseDuration", () => {
  test("parses seconds", () => assert.equal(parseDuration("30s"), 30_000));
  test("parses minutes", () => assert.equal(parseDuration("10m"), 600_000));
  test("parses hours", () => assert.equal(parseDuration("24h"), 86_400_000));
  test("parses milliseconds", () => assert.equal(parseDuration("250ms"), 250));
  test("parses microseconds in every spelling Go accepts", () => {
    assert.equal(parseDuration("1500us"), 1.5);
    assert.equal(parseDuration("1500\u00b5s"), 1.5);
    assert.equal(parseDuration("1500\u03bcs"), 1.5);
  });
  test("parses nanoseconds", () => assert.equal(parseDuration("2000000ns"), 2));
  test("adds up compound durations", () => assert.equal(parseDuration("1h30m"), 5_400_000));
  test("adds up compound durations with every unit", () => assert.equal(parseDuration("1h1m1s1ms"), 3_661_001));
  test("parses a fractional value", () => assert.equal(parseDuration("1.5h"), 5_400_000));
  test("keeps decimal fractions exact", () => assert.equal(parseDuration("1.1s"), 1_100));
  test("accepts a fraction without a leading digit", () => assert.equal(parseDuration(".5s"), 500));
  test("parses a negative duration", () => assert.equal(parseDuration("-1m"), -60_000));
  test("accepts an explicit plus sign", () => assert.equal(parseDuration("+5s"), 5_000));
  test("accepts a bare zero", () => assert.equal(parseDuration("0"), 0));
  test("accepts a negative zero as zero", () => assert.ok(Object.is(parseDuration("-0s"), 0)));
  test("rejects an empty string", () => assertInvalid("", "it is empty"));
  test("rejects a number without a unit", () => assertInvalid("10", "missing unit"));
  test("rejects a fraction without a unit", () => assertInvalid("1.5", "missing unit"));
  test("rejects an unknown unit", () => assertInvalid("10y", 'unknown unit "y"'));
  test("reads days and weeks for budget windows", () => {
    assert.equal(parseDuration("30d"), 30 * 86_400_000);
    assert.equal(parseDuration("1w2d"), 9 * 86_400_000);
  });
  test("rejects a unit without a number", () => assertInvalid("m", "expected a number"));
  test("rejects a sign in the middle", () => assertInvalid("1h-5m", 'unknown unit "h-"'));
  test("rejects surrounding whitespace", () => assertInvalid(" 1s", "expected a number"));
  test("rejects a lone sign", () => assertInvalid("-", "it is empty"));
  test("rejects a value beyond Go's int64 nanoseconds", () => assertInvalid("3000000h", "out of range"));
  test("tells the user what a valid duration looks like", () => assertInvalid("soon", 'e.g. "30s"'));
});

describe("formatDuration", () => {
  test("formats whole seconds", () => assert.equal(formatDuration(30_000), "30s"));
  test("formats whole minutes", () => assert.equal(formatDuration(600_000), "10m"));
  test("formats whole hours", () => assert.equal(formatDuration(3_600_000), "1h"));
  test("drops zero components", () => assert.equal(formatDuration(5_400_000), "1h30m"));
  test("formats minutes and seconds", () => assert.equal(formatDuration(90_000), "1m30s"));
  test("formats a fractional second", () => assert.equal(formatDuration(1_500), "1.5s"));
  test("formats sub-second values in milliseconds", () => assert.equal(formatDuration(250), "250ms"));
  test("formats sub-millisecond values in microseconds", () => assert.equal(formatDuration(0.5), "500us"));
  test("formats sub-microsecond values in nanoseconds", () => assert.equal(formatDuration(0.000_002), "2ns"));
  test("formats zero as 0s", () => assert.equal(formatDuration(0), "0s"));
  test("formats a negative duration", () => assert.equal(formatDuration(-60_000), "-1m"));
  test("keeps milliseconds inside a longer duration", () => assert.equal(formatDuration(3_661_001), "1h1m1.001s"));
  test("rejects a value that is not finite", () => {
    assert.throws(() => formatDuration(Number.NaN), (error: unknown) => error instanceof GatewayError && error.code === "invalid_argument");
  });
  test("round-trips through parseDuration", () => {
    for (const ms of [1, 250, 999, 1_000, 1_001, 59_999, 60_000, 86_400_000, 5_400_500, -90_000, 0.25]) {
      assert.equal(parseDuration(formatDuration(ms)), ms, `round trip of ${ms}`);
    }
  });
});
