/**
 * The V8 settings a serving gateway process runs with. The entry points apply them before the gateway
 * starts; they change how V8 manages memory, never what the gateway does.
 */
import { setFlagsFromString } from "node:v8";

/**
 * Turns off V8's allocation-site pretenuring. Under load a request's objects are often still alive when a
 * young-generation collection comes (the request is waiting on its upstream), so V8 judges the places
 * that allocate them long-lived and allocates every later one there straight into the old generation,
 * where it dies at once but stays until the next full collection. That garbage grew the old generation
 * by several megabytes a second under load and was most of the gateway's peak resident memory on the
 * PostgreSQL server. A flag read when V8 collects, so setting it at start-up takes effect.
 */
export function applyServingV8Flags(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
}
