/**
 * Keeps the hidden class of Node's next-tick queue entries alive for the life of the process.
 *
 * `process.nextTick` builds each entry as an object literal whose first two keys are computed (Node's
 * async-id symbols). V8 remembers the hidden class each computed key is defined on, but only weakly: when
 * no entry is alive at a full collection, as happens while the gateway idles after start-up, the class
 * is collected, the next entry gets a new one, and that definition site turns megamorphic for good. From
 * then on every `nextTick` (several per request inside Node's HTTP and stream code) defines the entry's
 * keys in the V8 runtime instead of in optimized code, a visible share of the gateway's CPU on the bench's
 * cache hits; holding one entry makes each hit and each forwarded JSON request cheaper.
 * Holding one entry holds its class and, through the class's back pointers, the classes the literal
 * passes through.
 */
import { createHook } from "node:async_hooks";

let kept: object | undefined;

function noop(): void {}

/**
 * Captures one next-tick entry and keeps it (a no-op after the first call). Call it first thing in an
 * entry point, before the first full collection can drop the entries' class. The async hook that sees the
 * entry is on only for the one `nextTick` call.
 */
export function keepTickObjectShape(): object | undefined {
  if (kept !== undefined) return kept;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === "TickObject") kept = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return kept;
}
