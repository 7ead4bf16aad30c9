/** Reading a live process's CPU time from /proc, for the benches that charge CPU per request or per call. */
import { readFileSync } from "node:fs";

/** CPU time (user + system) a live process has used so far, in ms (NaN once it is gone); /proc counts in USER_HZ = 100 ticks/s on Linux. */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}
