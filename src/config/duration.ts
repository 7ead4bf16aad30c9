/**
 * The one duration grammar of the config file, the admin API and request headers: an optional sign, then
 * one or more "<number><unit>" components ("30s", "1h30m", "250ms", "1.5h", "1w"), or a bare "0". The
 * units ns, us, ms, s, m, h, d and w have a fixed length; M (month), Q (quarter) and Y (year) follow the
 * calendar, so only the budget and rate-limit windows of keys, teams, customers and business units take
 * them. Up to hours the grammar is Go's time.ParseDuration, so files written for Go gateways keep working;
 * the arithmetic is done in integer nanoseconds (BigInt) so "1.1s" is exactly 1100 ms.
 *
 * Every reader words a bad value the same way, `invalid duration "<text>": <reason>; <how to write one>`,
 * and the field readers put the field's path in front (the config file's loader does that for its paths).
 */
import { GatewayError, invalidField } from "../errors.js";
import { describeValue } from "./config-issues.js";

const NS_PER_MS = 1_000_000n;
const NS_PER_SECOND = 1_000_000_000n;
const NS_PER_MINUTE = 60n * NS_PER_SECOND;
const NS_PER_HOUR = 60n * NS_PER_MINUTE;
/** Go durations are int64 nanoseconds; staying inside that range keeps files portable both ways. */
const MAX_NS = 2n ** 63n - 1n;

const FIXED_UNIT_NS: ReadonlyMap<string, bigint> = new Map([
  ["ns", 1n],
  ["us", 1_000n],
  ["\u00b5s", 1_000n], // micro sign, as Go accepts
  ["\u03bcs", 1_000n], // Greek small mu, as Go accepts
  ["ms", NS_PER_MS],
  ["s", NS_PER_SECOND],
  ["m", NS_PER_MINUTE],
  ["h", NS_PER_HOUR],
  // Beyond Go: budgets and rate-limit windows are naturally written in days and weeks ("30d", "1w").
  ["d", 24n * NS_PER_HOUR],
  ["w", 7n * 24n * NS_PER_HOUR],
]);

/** The calendar units, in months. */
export const CALENDAR_MONTHS = { M: 1, Q: 3, Y: 12 } as const;
export type CalendarUnit = keyof typeof CALENDAR_MONTHS;
const CALENDAR_NAMES: Readonly<Record<CalendarUnit, string>> = { M: "months", Q: "quarters", Y: "years" };

function isCalendarUnit(unit: string): unit is CalendarUnit {
  return Object.hasOwn(CALENDAR_MONTHS, unit);
}

/** The units a limit window may count: a window is aligned on its unit, so none shorter than a second. */
export type WindowUnit = "s" | "m" | "h" | "d" | "w" | CalendarUnit;
const WINDOW_UNITS: ReadonlySet<string> = new Set<WindowUnit>(["s", "m", "h", "d", "w", "M", "Q", "Y"]);
/** Longer counts are typing mistakes, and would overflow the calendar arithmetic. */
const MAX_WINDOW_COUNT = 999_999;

const FIXED_HINT = `write a number followed by a unit (ns, us, ms, s, m, h, d, w), e.g. "30s", "10m", "1h30m" or "30d"`;
const WINDOW_HINT = `write a whole count of one unit (s, m, h, d, w, M for months, Q for quarters, Y for years), e.g. "30s", "1d" or "1M"`;

/** One "<number><unit>" component; Go ends a unit at the next digit or dot. */
const COMPONENT = /^(\d*)(?:\.(\d*))?([^\d.]*)/;

interface Component {
  whole: string;
  fraction: string;
  unit: string;
}

function invalid(text: string, reason: string, hint: string): GatewayError {
  return new GatewayError("invalid_argument", `invalid duration "${text}": ${reason}; ${hint}`);
}

/** The sign and components of `text`, every component with a number and a unit; null for a bare zero. */
function components(text: string, hint: string): { negative: boolean; parts: Component[] } | null {
  let rest = text;
  let negative = false;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    negative = rest.startsWith("-");
    rest = rest.slice(1);
  }
  if (rest === "0") return null;
  if (rest === "") throw invalid(text, "it is empty", hint);
  const parts: Component[] = [];
  while (rest !== "") {
    const match = COMPONENT.exec(rest);
    const whole = match?.[1] ?? "";
    const fraction = match?.[2] ?? "";
    const unit = match?.[3] ?? "";
    if (match === null || (whole === "" && fraction === "")) throw invalid(text, `expected a number at "${rest}"`, hint);
    if (unit === "") throw invalid(text, `missing unit after "${match[0]}"`, hint);
    if (!FIXED_UNIT_NS.has(unit) && !isCalendarUnit(unit)) throw invalid(text, `unknown unit "${unit}"`, hint);
    parts.push({ whole, fraction, unit });
    rest = rest.slice(match[0].length);
  }
  return { negative, parts };
}

/**
 * Parses a fixed-length duration ("30s", "10m", "1h30m", "250ms", "1.5h", "-1m", "0") into milliseconds;
 * the calendar units are refused, since a month has no fixed length.
 */
export function parseDuration(text: string): number {
  const parsed = components(text, FIXED_HINT);
  if (parsed === null) return 0;
  let totalNs = 0n;
  for (const { whole, fraction, unit } of parsed.parts) {
    const unitNs = FIXED_UNIT_NS.get(unit);
    if (unitNs === undefined) {
      throw invalid(text, `"${unit}" counts calendar ${CALENDAR_NAMES[unit as CalendarUnit]}, which only the own budget and rate_limit of a key, team, customer or business unit take`, FIXED_HINT);
    }
    totalNs += BigInt(whole === "" ? "0" : whole) * unitNs;
    // Truncates below one nanosecond, as Go does.
    if (fraction !== "") totalNs += (BigInt(fraction) * unitNs) / 10n ** BigInt(fraction.length);
    if (totalNs > MAX_NS) throw invalid(text, "it is out of range (at most about 292 years)", FIXED_HINT);
  }
  const ms = Number(totalNs / NS_PER_MS) + Number(totalNs % NS_PER_MS) / 1e6;
  // `-0` would print as "0" but compare oddly with Object.is; a zero duration has no sign.
  if (ms === 0) return 0;
  return parsed.negative ? -ms : ms;
}

/** A limit window's length: a whole count of one unit. */
export interface WindowLength {
  count: number;
  unit: WindowUnit;
}

/**
 * Parses a budget or rate-limit window ("30s", "1d", "1w", "1M", "1Q", "1Y"): one unit, so a window can be
 * aligned on it (midnight, Monday, the 1st of the month), counted a positive whole number of times.
 */
export function parseWindowLength(text: string): WindowLength {
  const parsed = components(text, WINDOW_HINT);
  const part = parsed?.parts.length === 1 ? parsed.parts[0] : undefined;
  if (parsed === null || parsed.negative || (part !== undefined && part.fraction === "" && Number(part.whole) === 0)) {
    throw new GatewayError("invalid_argument", `must be greater than 0 (got "${text}")`);
  }
  if (part === undefined || part.whole === "" || part.fraction !== "") throw invalid(text, "a window is a whole count of one unit", WINDOW_HINT);
  if (!WINDOW_UNITS.has(part.unit)) throw invalid(text, `a window cannot be counted in "${part.unit}"`, WINDOW_HINT);
  const count = Number(part.whole);
  if (count > MAX_WINDOW_COUNT) throw invalid(text, `it is out of range (at most ${MAX_WINDOW_COUNT} of a unit)`, WINDOW_HINT);
  return { count, unit: part.unit as WindowUnit };
}

/** What a field takes beyond the grammar. */
export interface DurationRules {
  /** A value the field takes, for the message of a value that is not a string. */
  example: string;
  /** "positive" refuses 0 and below; "non-negative" refuses below 0; absent takes any sign. */
  sign?: "positive" | "non-negative";
  /** The shortest the field takes, as a duration ("1s"). */
  min?: string;
  /** The longest the field takes, as a duration ("30d"). */
  max?: string;
}

function notAString(value: unknown, example: string): GatewayError {
  return new GatewayError("invalid_argument", `must be a duration string such as "${example}", got ${describeValue(value)}`);
}

/** A fixed-length duration in milliseconds, checked against `rules`; the error does not name the field. */
export function checkedDuration(value: unknown, rules: DurationRules): number {
  if (typeof value !== "string") throw notAString(value, rules.example);
  const ms = parseDuration(value);
  if (rules.sign === "positive" && ms <= 0) throw new GatewayError("invalid_argument", `must be greater than 0 (got "${value}")`);
  if (rules.sign === "non-negative" && ms < 0) throw new GatewayError("invalid_argument", `must be 0 or more (got "${value}")`);
  if (rules.min !== undefined && ms < parseDuration(rules.min)) throw new GatewayError("invalid_argument", `must be at least ${rules.min} (got "${value}")`);
  if (rules.max !== undefined && ms > parseDuration(rules.max)) throw new GatewayError("invalid_argument", `must be at most ${rules.max} (got "${value}")`);
  return ms;
}

/** Rethrows a duration error with the field's path in front (a 400 naming the field). */
function naming<T>(field: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof GatewayError) throw invalidField(field, err.message);
    throw err;
  }
}

/** The fixed-length duration of an API or wire field, in milliseconds; a bad one is a 400 naming `field`. */
export function durationField(value: unknown, field: string, rules: DurationRules): number {
  return naming(field, () => checkedDuration(value, rules));
}

/** The limit window of an API or wire field, and its text as written; a bad one is a 400 naming `field`. */
export function windowField(value: unknown, field: string): WindowLength & { text: string } {
  return naming(field, () => {
    if (typeof value !== "string") throw notAString(value, "1d");
    return { ...parseWindowLength(value), text: value };
  });
}

/** Writes `value / scale` as a decimal with trailing zeros (and a bare dot) dropped. */
function decimal(value: bigint, scale: bigint): string {
  const whole = value / scale;
  const fraction = value % scale;
  if (fraction === 0n) return whole.toString();
  const width = scale.toString().length - 1;
  return `${whole}.${fraction.toString().padStart(width, "0").replace(/0+$/, "")}`;
}

/** Formats milliseconds as the shortest Go-style duration that parses back to the same value ("1h30m", "30s", "250ms"). */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) {
    throw new GatewayError("invalid_argument", `cannot format ${ms} as a duration: it must be a finite number of milliseconds`);
  }
  const negative = ms < 0;
  const magnitude = Math.abs(ms);
  const wholeMs = Math.trunc(magnitude);
  let ns = BigInt(wholeMs) * NS_PER_MS + BigInt(Math.round((magnitude - wholeMs) * 1e6));
  if (ns === 0n) return "0s";
  if (ns > MAX_NS) {
    throw new GatewayError("invalid_argument", `cannot format ${ms} ms as a duration: it is out of range (at most about 292 years)`);
  }

  let text: string;
  if (ns < 1_000n) text = `${ns}ns`;
  else if (ns < NS_PER_MS) text = `${decimal(ns, 1_000n)}us`;
  else if (ns < NS_PER_SECOND) text = `${decimal(ns, NS_PER_MS)}ms`;
  else {
    const hours = ns / NS_PER_HOUR;
    ns %= NS_PER_HOUR;
    const minutes = ns / NS_PER_MINUTE;
    ns %= NS_PER_MINUTE;
    text = "";
    if (hours > 0n) text += `${hours}h`;
    if (minutes > 0n) text += `${minutes}m`;
    if (ns > 0n) text += `${decimal(ns, NS_PER_SECOND)}s`;
  }
  return negative ? `-${text}` : text;
}
