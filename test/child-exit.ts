/**
 * How the test runners (lanes.ts, conformance/run-all.ts) read a child's end: its exit code, with a signal
 * or a failure to start counted as a failure, so a runner never mistakes a killed child for a pass.
 */
import type { ChildProcess } from "node:child_process";

/** Resolves with `child`'s exit code once it closed (1 when a signal ended it); a failure to start calls `onError` and resolves with 1. */
export function exitCodeOf(child: ChildProcess, onError: (message: string) => void): Promise<number> {
  return new Promise((resolve) => {
    child.on("close", (code, signal) => resolve(code ?? (signal !== null ? 1 : 0)));
    child.on("error", (err) => {
      onError(`could not start ${child.spawnfile}: ${err.message}\n`);
      resolve(1);
    });
  });
}
