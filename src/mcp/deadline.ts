/**
 * Bounds one upstream operation by a timeout and the caller's signal. The SDK's own request timeout
 * does not cover everything (an SSE GET that is never answered hangs transport.start()), so the whole
 * operation is raced against one deadline.
 */
import { upstreamError, upstreamFailure, upstreamTimeout } from "./upstream-errors.js";

/** Timeout and optional cancellation of one operation. */
export interface DeadlineOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Marks the abort reason of our own timer, to tell it from a caller's cancellation. */
class DeadlineReached extends Error {}

function isTimeoutReason(reason: unknown): boolean {
  return reason instanceof DeadlineReached || (reason instanceof Error && reason.name === "TimeoutError");
}

/**
 * Runs `work` with a signal that aborts at the deadline or when the caller aborts; rejects with a
 * classified GatewayError (upstream_timeout on the deadline). `hint` adds context to failure messages.
 */
export async function withDeadline<T>(
  what: string,
  options: DeadlineOptions,
  work: (signal: AbortSignal) => Promise<T>,
  hint?: () => string | undefined,
): Promise<T> {
  const { timeoutMs, signal: callerSignal } = options;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineReached(`${what} timed out`)), Math.max(0, timeoutMs));
  const onCallerAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) controller.abort(callerSignal.reason);
  else callerSignal?.addEventListener("abort", onCallerAbort, { once: true });
  let removeAbortWatch = () => {};
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = () => reject(controller.signal.reason);
    if (controller.signal.aborted) onAbort();
    else {
      controller.signal.addEventListener("abort", onAbort, { once: true });
      removeAbortWatch = () => controller.signal.removeEventListener("abort", onAbort);
    }
  });
  try {
    return await Promise.race([work(controller.signal), aborted]);
  } catch (err) {
    if (controller.signal.aborted) {
      const reason: unknown = controller.signal.reason;
      if (isTimeoutReason(reason)) throw upstreamTimeout(what, timeoutMs, err);
      throw upstreamError(`${what} was cancelled by the caller: ${reason instanceof Error ? reason.message : String(reason)}`, err);
    }
    throw upstreamFailure(err, what, timeoutMs, hint?.());
  } finally {
    clearTimeout(timer);
    removeAbortWatch();
    callerSignal?.removeEventListener("abort", onCallerAbort);
  }
}
