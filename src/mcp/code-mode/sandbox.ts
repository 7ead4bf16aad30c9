/**
 * Runs model-written JavaScript in a QuickJS WebAssembly sandbox: nothing but the language and the tool
 * bindings it is given (no require, import, process, fetch, timers, file system or network), a memory
 * limit, and one deadline for the whole run (an interrupt handler stops busy code; host calls still
 * pending at the deadline are aborted). Each run gets its own WebAssembly instance, so nothing a run does
 * (even exhausting its memory) can reach the next one.
 */
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from "quickjs-emscripten";
import { prepareCode, SANDBOX_FILE } from "./code-source.js";

/** One tool binding: `await <client>.<tool>(args)` in the code calls `host(client, tool, args)`. */
export type HostCall = (client: string, tool: string, args: unknown, signal: AbortSignal) => Promise<unknown>;

/** The limits of one run. */
export interface SandboxLimits {
  timeoutMs: number;
  memoryBytes: number;
}

/** Thrown by a host call to end the whole run with this outcome (a credential the user must submit first). */
export class SandboxStop extends Error {
  constructor(readonly outcome: unknown) {
    super("the run was stopped by a tool call");
  }
}

/** The outcome of one run: the JSON of the code's value, an error with the line it happened on, or a stop. */
export type SandboxOutcome = { kind: "value"; json: string } | { kind: "error"; message: string } | { kind: "stopped"; outcome: unknown };

/** Default memory for one run: ample for glue code, far from hurting the gateway. */
export const DEFAULT_SANDBOX_MEMORY_BYTES = 64 * 1024 * 1024;

const STACK_BYTES = 512 * 1024;

/** QuickJS, loaded on first use: a gateway without code-mode clients never pays for it at start. */
let quickjs: Promise<typeof import("quickjs-emscripten")> | null = null;

/** A host error as the code sees it: a tool failure is thrown into the code, which may catch it. */
function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function timeLimitText(limits: SandboxLimits): string {
  return `the code ran past the time limit of ${limits.timeoutMs} ms and was stopped`;
}

function memoryText(limits: SandboxLimits): string {
  return `the code ran out of memory (limit ${Math.round(limits.memoryBytes / (1024 * 1024))} MB) and was stopped`;
}

/** The line of the code an error happened on, from a QuickJS stack (`at ... (code.js:LINE...)`). */
function lineOf(stack: unknown): number | null {
  if (typeof stack !== "string") return null;
  const found = new RegExp(`${SANDBOX_FILE.replace(".", "\\.")}:(\\d+)`).exec(stack);
  return found ? Number(found[1]) : null;
}

/** A sandbox error value as readable text with its line. */
function errorText(vm: QuickJSContext, handle: QuickJSHandle, timedOut: boolean, limits: SandboxLimits): string {
  const dumped: unknown = vm.dump(handle);
  if (timedOut) return timeLimitText(limits);
  if (dumped !== null && typeof dumped === "object") {
    const { name, message, stack } = dumped as { name?: unknown; message?: unknown; stack?: unknown };
    if (name === "InternalError" && message === "interrupted") return timeLimitText(limits);
    const line = lineOf(stack);
    const text = `${typeof name === "string" ? name : "Error"}: ${typeof message === "string" ? message : JSON.stringify(dumped)}`;
    if (/out of memory/i.test(text)) return memoryText(limits);
    return line === null ? text : `${text} (line ${line})`;
  }
  if (dumped === null && vm.typeof(handle) === "object") return memoryText(limits);
  return `thrown: ${JSON.stringify(dumped)}`;
}

/**
 * Runs `code` with one global object per client whose methods are `tools[client]`. The value of the code's
 * last expression (or of a `result` variable) comes back as JSON.
 */
export async function runSandboxed(code: string, tools: ReadonlyMap<string, readonly string[]>, host: HostCall, limits: SandboxLimits, outer?: AbortSignal): Promise<SandboxOutcome> {
  const prepared = prepareCode(code);
  if (prepared.kind === "error") return { kind: "error", message: prepared.message };
  quickjs ??= import("quickjs-emscripten");
  const { newQuickJSWASMModule, RELEASE_SYNC, shouldInterruptAfterDeadline } = await quickjs;
  const module = await newQuickJSWASMModule(RELEASE_SYNC);
  const deadline = Date.now() + limits.timeoutMs;
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(STACK_BYTES);
  runtime.setInterruptHandler(shouldInterruptAfterDeadline(deadline));
  const vm = runtime.newContext();
  const abort = new AbortController();
  const signal = outer ? AbortSignal.any([abort.signal, outer]) : abort.signal;
  const pending = new Set<QuickJSDeferredPromise>();
  let stopped: SandboxStop | null = null;
  let timer: NodeJS.Timeout | undefined;
  // Only a run that settled with nothing in flight is torn down by hand; any other leaves objects QuickJS
  // would abort on, and its instance is simply dropped for the garbage collector.
  let finished = false;
  // Runs the jobs a settled host call or the first evaluation queued; a failure there rejects the code's
  // promise, which the run reports, so only its handle is let go of here.
  const pump = (): void => runtime.executePendingJobs().dispose();
  try {
    // One host function, wrapped per client and tool in the sandbox: arguments and results cross as JSON text.
    const call = vm.newFunction("__gwCall", (clientH, toolH, argsH) => {
      const client = vm.getString(clientH);
      const tool = vm.getString(toolH);
      const argsJson = vm.getString(argsH);
      const deferred = vm.newPromise();
      pending.add(deferred);
      void (async () => {
        let ok = true;
        let text: string;
        try {
          const value = await host(client, tool, JSON.parse(argsJson) as unknown, signal);
          text = JSON.stringify(value ?? null);
        } catch (err) {
          if (err instanceof SandboxStop && stopped === null) {
            stopped = err;
            abort.abort();
          }
          ok = false;
          text = describe(err);
        }
        if (!pending.has(deferred) || !vm.alive) return;
        pending.delete(deferred);
        const handle = ok ? vm.newString(text) : vm.newError({ name: "ToolError", message: text });
        if (ok) deferred.resolve(handle);
        else deferred.reject(handle);
        handle.dispose();
        deferred.dispose();
        pump();
      })();
      return deferred.handle;
    });
    vm.setProp(vm.global, "__gwCall", call);
    call.dispose();
    const evaluated = vm.evalCode(bindingsSource(tools) + prepared.source, SANDBOX_FILE);
    if (evaluated.error) {
      const message = errorText(vm, evaluated.error, Date.now() >= deadline, limits);
      evaluated.error.dispose();
      return { kind: "error", message };
    }
    const promiseHandle = evaluated.value;
    const settled = vm.resolvePromise(promiseHandle);
    promiseHandle.dispose();
    pump();
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now()));
    });
    const stop = new Promise<"stopped">((resolve) => signal.addEventListener("abort", () => resolve("stopped"), { once: true }));
    const result = await Promise.race([settled, timeout, stop]);
    if (stopped !== null) return { kind: "stopped", outcome: (stopped as SandboxStop).outcome };
    if (result === "timeout") return { kind: "error", message: timeLimitText(limits) };
    if (result === "stopped") return { kind: "error", message: "the call was cancelled" };
    if (result.error) {
      const message = errorText(vm, result.error, Date.now() >= deadline, limits);
      result.error.dispose();
      finished = pending.size === 0;
      return { kind: "error", message };
    }
    const json = vm.getString(result.value);
    result.value.dispose();
    finished = true;
    return { kind: "value", json };
  } finally {
    clearTimeout(timer);
    abort.abort();
    pending.clear();
    if (finished) {
      vm.dispose();
      runtime.dispose();
    }
  }
}

/** The client objects, defined before the code: each tool is a method sending its arguments as JSON. */
function bindingsSource(tools: ReadonlyMap<string, readonly string[]>): string {
  const parts: string[] = [];
  for (const [client, names] of tools) {
    // A failed call throws with the stack of its call site, so the error names the code's line.
    const methods = names.map(
      (tool) =>
        `${JSON.stringify(tool)}: async (args) => { const site = new Error(); try { return JSON.parse(await call(${JSON.stringify(client)}, ${JSON.stringify(tool)}, JSON.stringify(args === undefined ? {} : args))); } catch (e) { e.stack = String(site.stack).split("\\n").slice(1).join("\\n"); throw e; } }`,
    );
    parts.push(`globalThis[${JSON.stringify(client)}] = Object.freeze({ ${methods.join(", ")} });`);
  }
  // The host function is reachable only through the client objects, so the calls the code names are the
  // only calls it can make. All on the code's first line, so error lines match the code's own.
  return `(() => { const call = globalThis.__gwCall; delete globalThis.__gwCall; ${parts.join(" ")} })(); `;
}
