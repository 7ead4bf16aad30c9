/**
 * Windows of the hierarchy's budgets and rate limits: `30s`, `1m`, `1h`, `1d`, `1w`, `1M`, `1Q`, `1Y`
 * (any whole count). A window rolls from its last reset, or, calendar aligned, starts at the UTC boundary
 * (midnight, Monday, the 1st of the month, quarter or year).
 */
import { CALENDAR_MONTHS, windowField, type WindowUnit } from "../config/duration.js";

/** A window length: a count of one unit. Months, quarters and years follow the calendar. */
export interface WindowSpec {
  count: number;
  unit: WindowUnit;
  /** As written, for reads. */
  text: string;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const UNIT_MONTHS: Record<string, number> = CALENDAR_MONTHS;

/** Parses a window such as "1d" or "1M" (the duration grammar's window form); throws a 400 on `path`. */
export function parseWindow(text: unknown, path: string): WindowSpec {
  return windowField(text, path);
}

function addMonths(ms: number, months: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/**
 * The month-based window each spec met last, from its start, and the calendar-aligned one: a request reads
 * its windows several times at every level, and working out a calendar boundary takes a Date and a dozen
 * of its calls each time.
 */
const lastCalendarWindow = new WeakMap<WindowSpec, { start: number; end: number }>();
const lastAlignedWindow = new WeakMap<WindowSpec, { start: number; end: number }>();

/** The end of the window that starts at `start`. */
export function windowEnd(spec: WindowSpec, start: number): number {
  const months = UNIT_MONTHS[spec.unit];
  if (months === undefined) return start + spec.count * (UNIT_MS[spec.unit] as number);
  const last = lastCalendarWindow.get(spec);
  if (last !== undefined && last.start === start) return last.end;
  const end = addMonths(start, spec.count * months);
  lastCalendarWindow.set(spec, { start, end });
  return end;
}

/** The start of the calendar-aligned window containing `now` (UTC). */
function alignedStart(spec: WindowSpec, now: number): number {
  const months = UNIT_MONTHS[spec.unit];
  if (months !== undefined) {
    const last = lastAlignedWindow.get(spec);
    if (last !== undefined && last.start <= now && now < last.end) return last.start;
    const d = new Date(now);
    const span = spec.count * months;
    const index = d.getUTCFullYear() * 12 + d.getUTCMonth();
    const first = index - (index % span);
    const start = Date.UTC(Math.floor(first / 12), first % 12, 1);
    lastAlignedWindow.set(spec, { start, end: windowEnd(spec, start) });
    return start;
  }
  if (spec.unit === "w") {
    // Weeks start on Monday; 1970-01-01, day 0, was a Thursday (three days after a Monday).
    const day = Math.floor(now / 86_400_000);
    return (day - ((day + 3) % 7)) * 86_400_000;
  }
  const length = spec.count * (UNIT_MS[spec.unit] as number);
  return now - (now % length);
}

/** The start of the window containing `now`, given the start of the last one (null: none yet). */
export function currentWindowStart(spec: WindowSpec, calendarAligned: boolean, lastStart: number | null, now: number): number {
  if (calendarAligned) return alignedStart(spec, now);
  if (lastStart === null || now < lastStart) return now;
  let start = lastStart;
  const months = UNIT_MONTHS[spec.unit];
  if (months === undefined) {
    const length = spec.count * (UNIT_MS[spec.unit] as number);
    return start + Math.floor((now - start) / length) * length;
  }
  // Calendar months differ in length; a few hundred steps cover any realistic gap.
  for (let i = 0; i < 10_000 && windowEnd(spec, start) <= now; i++) start = windowEnd(spec, start);
  return start;
}
