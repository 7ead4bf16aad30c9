import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkedDuration, durationField, formatDuration, parseDuration, parseWindowLength, windowField } from "../../src/config/duration.js";
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
  test("refuses the calendar units, which have no fixed length", () => {
    assertInvalid("1M", '"M" counts calendar months, which only the own budget and rate_limit');
    for (const [text, unit, name] of [["1Q", "Q", "quarters"], ["2Y", "Y", "years"], ["1M2d", "M", "months"]] as const) assertInvalid(text, `"${unit}" counts calendar ${name}`);
  });
});

describe("parseWindowLength", () => {
  test("reads a whole count of every window unit", () => {
    for (const unit of ["s", "m", "h", "d", "w", "M", "Q", "Y"]) assert.deepEqual(parseWindowLength(`2${unit}`), { count: 2, unit });
    assert.deepEqual(parseWindowLength("999999s"), { count: 999_999, unit: "s" });
  });

  const refused = (text: string, fragment: string): void => {
    assert.throws(
      () => parseWindowLength(text),
      (error: unknown) => error instanceof GatewayError && error.code === "invalid_argument" && error.message.includes(fragment),
      text,
    );
  };

  test("refuses what cannot be aligned on one unit", () => {
    refused("1h30m", 'invalid duration "1h30m": a window is a whole count of one unit; write a whole count of one unit (s, m, h, d, w, M');
    for (const text of ["1.5h", ".5d"]) refused(text, "a window is a whole count of one unit");
    refused("500ms", 'a window cannot be counted in "ms"');
  });

  test("refuses a window of zero or less", () => {
    for (const text of ["0", "0d", "00M", "-1d"]) refused(text, `must be greater than 0 (got "${text}")`);
  });

  test("refuses malformed and out-of-range windows", () => {
    refused("", "it is empty");
    refused("d", "expected a number");
    refused("1y", 'unknown unit "y"');
    refused("1000000d", "out of range (at most 999999 of a unit)");
  });
});

describe("field readers", () => {
  const refusedAs = (read: () => unknown, message: string): void => {
    assert.throws(read, (error: unknown) => error instanceof GatewayError && error.code === "invalid_argument" && error.message.startsWith(message), message);
  };

  test("read a duration and hold it to the field's sign and maximum", () => {
    assert.equal(checkedDuration("10m", { example: "10m" }), 600_000);
    assert.equal(checkedDuration("-1m", { example: "10m" }), -60_000);
    assert.equal(checkedDuration("0", { example: "5m", sign: "non-negative" }), 0);
    assert.equal(checkedDuration("30d", { example: "1h", sign: "positive", max: "30d" }), 30 * 86_400_000);
    refusedAs(() => checkedDuration("0s", { example: "30s", sign: "positive" }), 'must be greater than 0 (got "0s")');
    refusedAs(() => checkedDuration("-1s", { example: "5m", sign: "non-negative" }), 'must be 0 or more (got "-1s")');
    refusedAs(() => checkedDuration("31d", { example: "1h", max: "30d" }), 'must be at most 30d (got "31d")');
    assert.equal(checkedDuration("1s", { example: "10m", min: "1s" }), 1_000);
    refusedAs(() => checkedDuration("999ms", { example: "10m", min: "1s" }), 'must be at least 1s (got "999ms")');
    refusedAs(() => checkedDuration(30, { example: "30s" }), 'must be a duration string such as "30s", got 30');
    refusedAs(() => checkedDuration(null, { example: "30s" }), 'must be a duration string such as "30s", got null');
  });

  test("put the field's path in front of the grammar's message", () => {
    const read = (): number => durationField("soon", "cache.ttl", { example: "1h" });
    refusedAs(read, 'cache.ttl: invalid duration "soon": expected a number at "soon"; write a number followed by a unit');
    assert.throws(read, (error: unknown) => error instanceof GatewayError && error.field === "cache.ttl");
    refusedAs(() => durationField("1M", "budgets[0].reset_duration", { example: "30d" }), 'budgets[0].reset_duration: invalid duration "1M": "M" counts calendar months');
  });

  test("read a window with its text as written", () => {
    assert.deepEqual(windowField("1Q", "budget.reset_duration"), { count: 1, unit: "Q", text: "1Q" });
    refusedAs(() => windowField("1h30m", "budget.reset_duration"), 'budget.reset_duration: invalid duration "1h30m": a window is a whole count of one unit');
    refusedAs(() => windowField(undefined, "rate_limit.token_reset_duration"), 'rate_limit.token_reset_duration: must be a duration string such as "1d", got undefined');
  });
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
