/**
 * The client side of an MCP server's stdio: the gateway spawns the child, writes one JSON-RPC message per
 * line to its stdin and reads one per line from its stdout. Besides what the SDK's stdio transport does, it
 * keeps the child's pid after exit (to wait for it on close), drains stderr into debug logs within a byte
 * budget (an undrained pipe would block the child), and bounds one message without losing the connection:
 * a line over the bound is skipped to its newline, and when its first and last bytes show which pending
 * request it answered, that request gets a JSON-RPC error naming the bound in its answer's place, as over
 * streamable HTTP. (The SDK's transport stops the child instead, and joins a long line's chunks again at
 * every chunk.)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../telemetry/logger.js";
import { MAX_UPSTREAM_MESSAGE_BYTES, OversizedMessageError } from "./message-bound.js";
import { PendingRequests } from "./pending-requests.js";
import { LineReader } from "./stdio-lines.js";

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

/** How long close waits for the child after ending its stdin, and again after SIGTERM. */
const CLOSE_STEP_MS = 2000;

/** A stdio client transport that remembers its child, logs its stderr and bounds each message. */
export class ChildProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The child's pid once spawned; kept after exit. */
  childPid: number | undefined;
  private child: ChildProcess | undefined;
  /** The requests sent and not yet answered: what an answer over the bound is owed. */
  private readonly pending = new PendingRequests();
  private readonly lines: LineReader;
  /** The last non-empty stderr lines, oldest first. */
  private readonly lastStderrLines: string[] = [];
  /** A last line the child wrote without its newline. */
  private pendingStderr = "";
  private stderrLogged = 0;
  private readonly exitWaiters: Array<() => void> = [];
  private exited = false;

  constructor(
    private readonly spec: ChildSpec,
    private readonly logger: Logger,
    private readonly maxMessageBytes = MAX_UPSTREAM_MESSAGE_BYTES,
  ) {
    this.lines = new LineReader(maxMessageBytes, { line: (text) => this.receive(text), oversized: (head, tail) => this.oversized(head, tail) });
  }

  /** Spawns the child; resolves once it runs, rejects when it cannot be spawned. */
  start(): Promise<void> {
    if (this.child !== undefined) return Promise.reject(new Error("the stdio transport was already started"));
    return new Promise((resolve, reject) => {
      const child = spawn(this.spec.command, this.spec.args, { env: this.spec.env, stdio: ["pipe", "pipe", "pipe"], shell: false, windowsHide: true });
      this.child = child;
      child.on("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on("spawn", () => {
        this.childPid = child.pid;
        resolve();
      });
      child.on("close", () => {
        this.child = undefined;
        this.lines.clear();
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => this.lines.push(chunk));
      child.stdout?.on("error", (err) => this.onerror?.(err));
      child.stderr?.on("data", (chunk: Buffer) => this.readStderr(chunk));
    });
  }

  /** Writes `message` as one line; resolves once the pipe took it (after a drain when it was full). */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (stdin === undefined || stdin === null) return Promise.reject(new Error("Not connected"));
    this.pending.sent(message);
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Ends the child's stdin, then SIGTERMs and at last SIGKILLs a child that does not exit, each after a wait. */
  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    this.pending.clear();
    if (child === undefined) return;
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const waitStep = (): Promise<unknown> => Promise.race([closed, new Promise((resolve) => setTimeout(resolve, CLOSE_STEP_MS).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // The pipe is already gone.
    }
    await waitStep();
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      if (signal === "SIGTERM") await waitStep();
    }
  }

  /** One line from the child: a message, or an error for a line that is not one (the connection goes on). */
  private receive(text: string): void {
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch (err) {
      this.onerror?.(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.pending.received(message);
    this.onmessage?.(message);
  }

  /** A line over the bound: the request it answered gets an error in its place; anything else is reported and dropped. */
  private oversized(head: string, tail: string): void {
    const answer = this.pending.owedFor(head, tail, this.maxMessageBytes);
    if (answer !== undefined) this.onmessage?.(answer);
    else this.onerror?.(new OversizedMessageError(this.maxMessageBytes));
  }

  private readStderr(chunk: Buffer): void {
    const text = this.pendingStderr + chunk.toString("utf8");
    const lines = text.split(/\r?\n/);
    this.pendingStderr = (lines.pop() ?? "").slice(-STDERR_TAIL_MAX);
    for (const line of lines) {
      if (line.trim().length === 0) continue;
      this.lastStderrLines.push(line.slice(0, STDERR_TAIL_MAX));
      if (this.lastStderrLines.length > STDERR_TAIL_LINES) this.lastStderrLines.shift();
      if (this.stderrLogged >= STDERR_LOG_BUDGET) continue;
      this.stderrLogged += line.length;
      this.logger.debug({ pid: this.childPid, line: line.slice(0, 2000) }, "stdio upstream stderr");
      if (this.stderrLogged >= STDERR_LOG_BUDGET) this.logger.debug({ pid: this.childPid }, "stdio upstream stderr: log budget reached, further output dropped");
    }
  }

  /** Called when the session learns the process closed (its onclose). */
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
