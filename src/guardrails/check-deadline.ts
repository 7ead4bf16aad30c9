/**
 * One call-out within its guardrail's timeout. The call gets a cancellation of its own, aborted when the
 * time is up or when the caller goes away; the promise settles at that moment whether or not the call has
 * stopped yet, so a request never waits on a check past its timeout.
 */
import { RequestAbort, type AbortSource } from "../cancellation.js";

/**
 * Runs `call` with a signal aborted after `timeoutMs` (the promise then rejects with `timedOut()`) or with
 * `caller` (it rejects with the caller's reason); otherwise settles as `call` does.
 */
export function withinTimeout<T>(timeoutMs: number, caller: AbortSource | undefined, timedOut: () => Error, call: (signal: AbortSource) => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const own = new RequestAbort();
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      caller?.removeEventListener("abort", onCallerAbort);
      return true;
    };
    const onCallerAbort = {
      handleEvent(): void {
        if (!settle()) return;
        own.abort(caller?.reason);
        reject(caller?.reason);
      },
    };
    const timer = setTimeout(() => {
      if (!settle()) return;
      const error = timedOut();
      own.abort(error);
      reject(error);
    }, timeoutMs);
    if (caller?.aborted) {
      onCallerAbort.handleEvent();
      return;
    }
    caller?.addEventListener("abort", onCallerAbort, { once: true });
    let running: Promise<T>;
    try {
      running = call(own);
    } catch (err) {
      running = Promise.reject(err);
    }
    running.then(
      (value) => {
        if (settle()) resolve(value);
      },
      (err: unknown) => {
        if (settle()) reject(err);
      },
    );
  });
}
