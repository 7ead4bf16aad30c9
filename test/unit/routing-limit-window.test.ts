/** Windows of the hierarchy's limits: parsing, rolling windows, and calendar-aligned ones in UTC. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { currentWindowStart, parseWindow, windowEnd } from "../../src/routing/limit-window.js";

const at = (text: string): number => Date.parse(text);

describe("limit windows", () => {
  test("rejects a window without a known unit, naming the field", () => {
    const cases: [unknown, string][] = [
      ["1x", 'invalid duration "1x": unknown unit "x"'],
      ["d", 'invalid duration "d": expected a number'],
      ["0d", 'must be greater than 0 (got "0d")'],
      ["1.5h", 'invalid duration "1.5h": a window is a whole count of one unit'],
      [3, 'must be a duration string such as "1d", got 3'],
    ];
    for (const [bad, message] of cases) {
      assert.throws(() => parseWindow(bad, "budget.reset_duration"), (err: Error) => err.message.startsWith(`budget.reset_duration: ${message}`), String(bad));
    }
  });

  test("rolls a window on from its last start by whole lengths", () => {
    const spec = parseWindow("1h", "w");
    const start = at("2026-01-01T10:20:00Z");
    assert.equal(currentWindowStart(spec, false, start, at("2026-01-01T11:19:59Z")), start);
    assert.equal(currentWindowStart(spec, false, start, at("2026-01-01T13:30:00Z")), at("2026-01-01T13:20:00Z"));
  });

  test("rolls a monthly window by calendar months", () => {
    const spec = parseWindow("1M", "w");
    const start = at("2026-01-31T00:00:00Z");
    assert.equal(windowEnd(spec, start), at("2026-03-03T00:00:00Z"));
    assert.equal(currentWindowStart(spec, false, start, at("2026-03-10T00:00:00Z")), at("2026-03-03T00:00:00Z"));
  });

  test("aligns a weekly window to Monday midnight UTC", () => {
    // 2026-01-08 is a Thursday.
    assert.equal(currentWindowStart(parseWindow("1w", "w"), true, null, at("2026-01-08T15:00:00Z")), at("2026-01-05T00:00:00Z"));
  });

  test("aligns day, month, quarter and year windows to their UTC boundaries", () => {
    const now = at("2026-08-17T15:42:00Z");
    assert.equal(currentWindowStart(parseWindow("1d", "w"), true, null, now), at("2026-08-17T00:00:00Z"));
    assert.equal(currentWindowStart(parseWindow("1M", "w"), true, null, now), at("2026-08-01T00:00:00Z"));
    assert.equal(currentWindowStart(parseWindow("1Q", "w"), true, null, now), at("2026-07-01T00:00:00Z"));
    assert.equal(currentWindowStart(parseWindow("1Y", "w"), true, null, now), at("2026-01-01T00:00:00Z"));
    assert.equal(windowEnd(parseWindow("1Q", "w"), at("2026-07-01T00:00:00Z")), at("2026-10-01T00:00:00Z"));
  });

  test("moves one spec's aligned window on when asked past its end, and back when asked before it", () => {
    const spec = parseWindow("1M", "w");
    assert.equal(currentWindowStart(spec, true, null, at("2026-08-17T15:42:00Z")), at("2026-08-01T00:00:00Z"));
    assert.equal(currentWindowStart(spec, true, null, at("2026-08-31T23:59:59.999Z")), at("2026-08-01T00:00:00Z"));
    assert.equal(currentWindowStart(spec, true, null, at("2026-09-01T00:00:00Z")), at("2026-09-01T00:00:00Z"));
    assert.equal(currentWindowStart(spec, true, null, at("2026-08-20T00:00:00Z")), at("2026-08-01T00:00:00Z"));
  });

  test("ends one spec's monthly windows from each start it is asked about", () => {
    const spec = parseWindow("1M", "w");
    assert.equal(windowEnd(spec, at("2026-01-15T00:00:00Z")), at("2026-02-15T00:00:00Z"));
    assert.equal(windowEnd(spec, at("2026-02-15T00:00:00Z")), at("2026-03-15T00:00:00Z"));
    assert.equal(windowEnd(spec, at("2026-01-15T00:00:00Z")), at("2026-02-15T00:00:00Z"));
  });

  test("aligns a weekly window from Sunday night and Monday morning alike", () => {
    const spec = parseWindow("1w", "w");
    assert.equal(currentWindowStart(spec, true, null, at("2026-01-11T23:59:59.999Z")), at("2026-01-05T00:00:00Z"));
    assert.equal(currentWindowStart(spec, true, null, at("2026-01-12T00:00:00Z")), at("2026-01-12T00:00:00Z"));
    assert.equal(currentWindowStart(spec, true, null, at("1970-01-01T12:00:00Z")), at("1969-12-29T00:00:00Z"));
  });
});
