/**
 * The SDK's stdio transport, plus what the gateway needs around a child process: its pid kept after
 * the SDK forgets it (to wait for the exit on close), a promise of its exit, and its stderr drained
 * into debug logs within a byte budget (an undrained pipe would block the child).
 */
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Logger } from "../telemetry/logger.js";

/** Most stderr bytes logged per child; the rest is drained unlogged. */
const STDERR_LOG_BUDGET = 64 * 1024;
/** Longest stderr line kept for error messages. */
const STDERR_TAIL_MAX = 300;
/** How many of the last stderr lines error messages quote: a failing child often explains itself over several. */
const STDERR_TAIL_LINES = 5;

/** What to spawn. */
export interface ChildSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** A stdio transport that remembers its child and logs its stderr. */
export class ChildProcessTransport extends StdioClientTransport {
  /** The child's pid once spawned; kept after exit, unlike the SDK's `pid`. */
  childPid: number | undefined;
  /** The last non-empty stderr lines, oldest first. */
  private readonly lastStderrLines: string[] = [];
  /** A last line the child wrote without its newline. */
  private pendingStderr = "";
  private readonly exitWaiters: Array<() => void> = [];
  private exited = false;

  constructor(spec: ChildSpec, logger: Logger) {
    super({ command: spec.command, args: spec.args, env: spec.env, stderr: "pipe" });
    let logged = 0;
    this.stderr?.on("data", (chunk: Buffer) => {
      const text = this.pendingStderr + chunk.toString("utf8");
      const lines = text.split(/\r?\n/);
      this.pendingStderr = (lines.pop() ?? "").slice(-STDERR_TAIL_MAX);
      for (const line of lines) {
        if (line.trim().length === 0) continue;
        this.lastStderrLines.push(line.slice(0, STDERR_TAIL_MAX));
        if (this.lastStderrLines.length > STDERR_TAIL_LINES) this.lastStderrLines.shift();
        if (logged >= STDERR_LOG_BUDGET) continue;
        logged += line.length;
        logger.debug({ pid: this.childPid, line: line.slice(0, 2000) }, "stdio upstream stderr");
        if (logged >= STDERR_LOG_BUDGET) logger.debug({ pid: this.childPid }, "stdio upstream stderr: log budget reached, further output dropped");
      }
    });
  }

  /** Spawns the child and records its pid. */
  override async start(): Promise<void> {
    await super.start();
    this.childPid = this.pid ?? undefined;
  }

  /** Called when the SDK reports the process closed (its onclose). */
  markExited(): void {
    this.exited = true;
    for (const resolve of this.exitWaiters.splice(0)) resolve();
  }

  /** Resolves once the child has exited, or after `boundMs`; true when it did exit. */
  async waitForExit(boundMs: number): Promise<boolean> {
    if (this.exited || this.childPid === undefined) return true;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      new Promise<boolean>((resolve) => this.exitWaiters.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), boundMs);
      }),
    ]);
    clearTimeout(timer);
    return exited;
  }

  /** The last few non-empty stderr lines joined by " | ", for error messages ("" when none). */
  stderrTail(): string {
    const lines = this.pendingStderr.trim() === "" ? this.lastStderrLines : [...this.lastStderrLines, this.pendingStderr].slice(-STDERR_TAIL_LINES);
    return lines.join(" | ");
  }
}
