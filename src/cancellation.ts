/**
 * Cancelling a request's upstream work when its client goes away, without paying for an AbortSignal on
 * every request. On Node 20 an AbortSignal is costly to create, and so is every listener added and
 * removed (EventTarget machinery), next to what a whole pass-through proxy spends on a request.
 * RequestAbort keeps a plain listener list and makes a real AbortSignal only for the callers that need
 * one (the MCP SDK, undici's request() on streamed calls).
 */

/** An abort listener: a function, or an object with handleEvent (the EventTarget forms). */
export type AbortListener = ((event: Event) => void) | { handleEvent(event: Event): void };

/** What a call reads from its caller's cancellation; an AbortSignal satisfies it, and so does RequestAbort. */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: AbortListener): void;
}

/** The one event every RequestAbort listener receives. */
let abortEvent: Event | undefined;

/** A request's cancellation: abort() runs the listeners once; `signal` is a real AbortSignal made on first use. */
export class RequestAbort implements AbortSource {
  #aborted = false;
  #reason: unknown = undefined;
  #listeners: AbortListener[] = [];
  #controller: AbortController | null = null;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  /** An AbortSignal that aborts with this request (already aborted when the request is). */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts once with `reason`; the listeners must not throw (they only cut their own calls short). */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    abortEvent ??= new Event("abort");
    for (const listener of listeners) {
      if (typeof listener === "function") listener(abortEvent);
      else listener.handleEvent(abortEvent);
    }
    this.#controller?.abort(reason);
  }

  /** As on an AbortSignal: a listener added after the abort never runs, and each runs at most once. */
  addEventListener(_type: "abort", listener: AbortListener): void {
    if (!this.#aborted && !this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: AbortListener): void {
    const index = this.#listeners.indexOf(listener);
    if (index !== -1) this.#listeners.splice(index, 1);
  }
}

/** The AbortSignal of a request's cancellation, for APIs that take only a real one. */
export function asAbortSignal(source: RequestAbort | AbortSignal): AbortSignal {
  return source instanceof RequestAbort ? source.signal : source;
}
