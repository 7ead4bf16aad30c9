/**
 * The resident memory of a process together with every process it started (the embedded database's
 * helpers, a bench child's own children), read from /proc, and a sampler that keeps each tree's peak.
 */
import { readdirSync, readFileSync } from "node:fs";

/** A process and all its descendants, from /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    const current = tree[i] as number;
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${current}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        for (const child of readFileSync(`/proc/${current}/task/${tid}/children`, "utf8").split(" ")) if (child.trim()) tree.push(Number(child));
      } catch {
        // The task ended while we read it.
      }
    }
  }
  return tree;
}

/** The summed resident set (VmRSS) of a process tree now, in MiB; null when the root is gone. */
export function treeRssMiB(pid: number): number | null {
  let kib = 0;
  let found = false;
  for (const member of processTree(pid)) {
    try {
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${member}/status`, "utf8"));
      if (match?.[1] !== undefined) {
        kib += Number(match[1]);
        found = true;
      }
    } catch {
      // The process ended while we read it.
    }
  }
  return found ? kib / 1024 : null;
}

/** Samples each watched process tree's RSS every `intervalMs` and keeps its peak. */
export class TreeRssPeaks {
  private readonly peaks = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs: number) {
    this.timer = setInterval(() => this.sample(), intervalMs).unref();
  }

  /** Starts keeping the peak of the tree rooted at `pid` (sampled at once, so a start-up peak counts). */
  watch(pid: number | undefined): void {
    if (pid !== undefined && !this.peaks.has(pid)) this.peaks.set(pid, 0);
    this.sample();
  }

  /** The highest sum seen for the tree rooted at `pid`, in MiB; null when it was never seen. */
  peakOf(pid: number | undefined): number | null {
    const peak = pid === undefined ? undefined : this.peaks.get(pid);
    return peak === undefined || peak === 0 ? null : peak;
  }

  /** Takes a last sample and stops sampling. */
  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }

  private sample(): void {
    for (const [pid, peak] of this.peaks) {
      const rss = treeRssMiB(pid);
      if (rss !== null && rss > peak) this.peaks.set(pid, rss);
    }
  }
}
