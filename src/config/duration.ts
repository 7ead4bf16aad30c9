/**
 * Go-style duration strings ("30s", "1h30m", "250ms", "1.5h"), the format the config file and the
 * tool manager settings use. Parsing follows Go's time.ParseDuration so files written for Go gateways keep
 * working; the arithmetic is done in integer nanoseconds (BigInt) so "1.1s" is exactly 1100 ms.
 */
import { GatewayError } from "../errors.js";

const NS_PER_MS = 1_000_000n;
const NS_PER_SECOND = 1_000_000_000n;
const NS_PER_MINUTE = 60n * NS_PER_SECOND;
const NS_PER_HOUR = 60n * NS_PER_MINUTE;
/** Go durations are int64 nanoseconds; staying inside that range keeps files portable both ways. */
const MAX_NS = 2n ** 63n - 1n;

const UNIT_NS: ReadonlyMap<string, bigint> = new Map([
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

/** One "<number><unit>" component; Go ends a unit at the next digit or dot. */
const COMPONENT = /^(\d*)(?:\.(\d*))?([^\d.]*)/;

function invalid(text: string, reason: string): GatewayError {
  return new GatewayError(
    "invalid_argument",
    `invalid duration "${text}": ${reason}; write a number followed by a unit (ns, us, ms, s, m, h, d, w), e.g. "30s", "10m", "1h30m" or "30d"`,
  );
}

/** Parses a Go-style duration ("30s", "10m", "1h30m", "250ms", "1.5h", "-1m", "0") into milliseconds. */
export function parseDuration(text: string): number {
  let rest = text;
  let negative = false;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    negative = rest.startsWith("-");
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw invalid(text, "it is empty");

  let totalNs = 0n;
  while (rest !== "") {
    const match = COMPONENT.exec(rest);
    const whole = match?.[1] ?? "";
    const fraction = match?.[2] ?? "";
    const unitName = match?.[3] ?? "";
    if (match === null || (whole === "" && fraction === "")) throw invalid(text, `expected a number at "${rest}"`);
    if (unitName === "") throw invalid(text, `missing unit after "${match[0]}"`);
    const unit = UNIT_NS.get(unitName);
    if (unit === undefined) throw invalid(text, `unknown unit "${unitName}"`);

    totalNs += BigInt(whole === "" ? "0" : whole) * unit;
    if (fraction !== "") {
      // Truncates below one nanosecond, as Go does.
      totalNs += (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length);
    }
    if (totalNs > MAX_NS) throw invalid(text, "it is out of range (at most about 292 years)");
    rest = rest.slice(match[0].length);
  }

  const ms = Number(totalNs / NS_PER_MS) + Number(totalNs % NS_PER_MS) / 1e6;
  // `-0` would print as "0" but compare oddly with Object.is; a zero duration has no sign.
  if (ms === 0) return 0;
  return negative ? -ms : ms;
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
