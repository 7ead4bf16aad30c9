/**
 * A watchdog for the test runners: node's test runner gives every file a process of its own and waits for it
 * without a limit, so a file whose process hangs (a deadlock in Node itself blocks the thread, and with it every
 * timer a test could set) stalls the whole run. The watchdog looks at the runner's children every few seconds
 * (through `ps`, on Linux) and kills any that has run for longer than the limit, naming its file; the runner
 * then counts that file as failed and goes on with the rest.
 */
import { execFile, type ChildProcess } from "node:child_process";

/** How a watchdog watches. */
export interface WatchdogOptions {
  /** The longest a test file's process may run, in seconds. */
  limitS: number;
  /** How often the runner's children are looked at, in milliseconds. */
  everyMs: number;
  /** Told of each file stopped, with a line to print and the file's path as its process was given it. */
  report: (line: string, file: string) => void;
}

/** The file a test process runs: the last argument that names a test file, else its whole command line. */
function fileOf(args: string): string {
  return args.split(" ").findLast((arg) => /\.test\.[cm]?[jt]s$/.test(arg)) ?? args;
}

/** Watches `runner`'s children until the returned function is called (or the runner ends). */
export function watchTestFiles(runner: ChildProcess, options: WatchdogOptions): () => void {
  const stopped = new Set<number>();
  const look = (): void => {
    if (runner.pid === undefined || runner.exitCode !== null) return;
    execFile("ps", ["-o", "pid=,etimes=,args=", "--ppid", String(runner.pid)], (err, stdout) => {
      // No `ps`, or one without --ppid: the run goes on unwatched, as it would without a watchdog.
      if (err !== null) return;
      for (const line of stdout.split("\n")) {
        const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
        if (match === null) continue;
        const pid = Number(match[1]);
        const seconds = Number(match[2]);
        if (seconds <= options.limitS || stopped.has(pid)) continue;
        stopped.add(pid);
        const file = fileOf(match[3] ?? "");
        options.report(`== ${file} ran for more than ${options.limitS} s: stopped it (process ${pid}) as hung\n`, file);
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // It ended on its own in the meantime.
        }
      }
    });
  };
  const timer = setInterval(look, options.everyMs);
  timer.unref();
  runner.once("close", () => clearInterval(timer));
  return () => clearInterval(timer);
}
