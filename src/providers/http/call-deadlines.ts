/**
 * The deadlines of the upstream calls in flight (their wait for headers, the silence between their body's
 * chunks), checked together on one clock that ticks only while a call is listed. A Node timer per call and
 * phase costs each call a timer object, a native clock read and a timer list made and dropped; undici's own
 * timers, on a coarse shared clock, stay listed for up to a second after they are cleared, long enough to be
 * promoted out of the young generation, so every call left garbage behind for the full collector. A call here is
 * one slot in a list, moved by a field write, and its deadline is met within one tick after it passes.
 */
import { performance } from "node:perf_hooks";

/** How often the listed deadlines are checked: a deadline is met up to this much late, never early. */
export const DEADLINE_TICK_MS = 50;

/** A call on the clock. */
export interface Deadlined {
  /** The performance.now() after which it is overdue; Infinity while it awaits nothing. */
  deadline: number;
  /** Where it is in the list; -1 while it is not listed. Written only here. */
  deadlineSlot: number;
  /** Its deadline passed: called once, from the clock's tick, after it left the list. */
  overdue(): void;
}

const listed: Deadlined[] = [];
let ticking: NodeJS.Timeout | undefined;

/** Lists `call` (once; its deadline may move while listed). */
export function watchDeadline(call: Deadlined): void {
  if (call.deadlineSlot !== -1) return;
  call.deadlineSlot = listed.length;
  listed.push(call);
  // Unreferenced: a call in flight keeps the process up by its socket, not by its deadline.
  ticking ??= setInterval(tick, DEADLINE_TICK_MS).unref();
}

/** Takes `call` off the list (nothing when it is not on it). */
export function unwatchDeadline(call: Deadlined): void {
  const slot = call.deadlineSlot;
  if (slot === -1) return;
  call.deadlineSlot = -1;
  const last = listed.pop() as Deadlined;
  if (last !== call) {
    listed[slot] = last;
    last.deadlineSlot = slot;
  }
}

/** How many calls are listed (for tests). */
export function watchedDeadlines(): number {
  return listed.length;
}

function tick(): void {
  if (listed.length === 0) {
    clearInterval(ticking);
    ticking = undefined;
    return;
  }
  const now = performance.now();
  // From the end: taking a call off moves the last one into its slot, which this walk has passed already.
  for (let index = listed.length - 1; index >= 0; index--) {
    const call = listed[index];
    if (call === undefined || now < call.deadline) continue;
    unwatchDeadline(call);
    call.overdue();
    // An overdue call may end others' waits too; never read past the list's end.
    if (index > listed.length) index = listed.length;
  }
}
