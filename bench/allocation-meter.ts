/**
 * Bench children's side of the allocation figure: how many bytes of JavaScript heap a target allocates
 * while the bench counts its requests. Allocation drives the garbage collector's share of CPU and how far
 * V8 lets the heap (and so the peak RSS) grow, and unlike req/s it barely moves with the machine's speed.
 *
 * The parent writes `alloc-start` and then `alloc-stop` as lines on the child's stdin; on `alloc-stop`
 * the child prints `{"allocatedBytes": n}` as a line on stdout. The count is the heap's growth between
 * collections, read from V8's GC profiler (each collection's heap size before it, minus the size after
 * the previous one), so no allocation is sampled or slowed down.
 */
import { createInterface } from "node:readline";
import { GCProfiler, getHeapStatistics } from "node:v8";

/** Bytes allocated from `startUsed` (the used heap when the profiler started) to `endUsed`, across the collections in between. */
function allocatedBetween(startUsed: number, endUsed: number, collections: ReturnType<GCProfiler["stop"]>["statistics"]): number {
  let allocated = 0;
  let after = startUsed;
  for (const collection of collections) {
    allocated += Math.max(0, collection.beforeGC.heapStatistics.usedHeapSize - after);
    after = collection.afterGC.heapStatistics.usedHeapSize;
  }
  return allocated + Math.max(0, endUsed - after);
}

/** Answers the parent's alloc-start / alloc-stop lines on stdin (the child's other stdin handlers keep working). */
export function answerAllocationRequests(): void {
  let profiler: GCProfiler | null = null;
  let startUsed = 0;
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "alloc-start") {
      profiler = new GCProfiler();
      startUsed = getHeapStatistics().used_heap_size;
      profiler.start();
      return;
    }
    if (line !== "alloc-stop" || profiler === null) return;
    const endUsed = getHeapStatistics().used_heap_size;
    const { statistics } = profiler.stop();
    profiler = null;
    process.stdout.write(`${JSON.stringify({ allocatedBytes: allocatedBetween(startUsed, endUsed, statistics) })}\n`);
  });
}
