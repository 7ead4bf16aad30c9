/**
 * Preloaded into a gateway by `bench/allocation-sites.ts` (`node --import`): V8's sampling heap profiler
 * driven over the IPC channel. `{start: true}` starts it, keeping samples of objects the collectors already
 * freed, so the profile holds everything allocated rather than what is still alive (with
 * BENCH_ALLOCATION_PROMOTED=1, only those the young generation's collections did not free); `{stop: <file>}` writes
 * the profile there and answers `{stopped: <file>}`. The channel is unreferenced: it never keeps the
 * gateway running.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

/** Bytes between samples: small enough that a request's objects are sampled many times over a run. */
const SAMPLING_INTERVAL = 512;

const session = new Session();
session.connect();
process.channel?.unref();
process.on("message", (message: { start?: boolean; stop?: string }) => {
  void (async () => {
    if (message.start === true) {
      await session.post("HeapProfiler.startSampling", { samplingInterval: SAMPLING_INTERVAL, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env["BENCH_ALLOCATION_PROMOTED"] !== "1" });
      process.send?.({ started: true });
    } else if (typeof message.stop === "string") {
      const { profile } = await session.post("HeapProfiler.stopSampling");
      writeFileSync(message.stop, JSON.stringify(profile));
      process.send?.({ stopped: message.stop });
    }
  })();
});
