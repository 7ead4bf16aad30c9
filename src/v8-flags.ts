/**
 * The V8 settings a serving gateway process runs with. The entry points apply them before the gateway
 * starts, but for those V8 reads only when it sets its heap up, which go on node's command line; they
 * change how V8 manages memory, never what the gateway does.
 */
import { setFlagsFromString } from "node:v8";

/**
 * The node flags `npm start`, the Dockerfile and the README's systemd unit put before `dist/main.js` (a
 * test checks that they agree). V8 sizes the young generation when it sets the heap up, so setting this
 * later from the process changes nothing. Each of its two halves may grow to 16 MB by default, and under
 * load both are touched in full; at 8 MB the gateway's peak RSS under load is lower for a little more
 * collection time (young-generation collections twice as often, each as cheap: what survives one is the
 * few requests in flight). Smaller still saves a little more memory for much more collection time.
 */
export const SERVING_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=8"];

/**
 * How far the old generation may grow past what the last full collection kept before the next one, in
 * percent. V8 otherwise picks a factor of up to 4 when collections are cheap, as they are for a gateway
 * whose live heap is small: after the start-up collection it let the old generation fill with dead
 * request objects (those still in flight at two young-generation collections) until it was several times
 * the live heap, and that garbage was most of the peak resident memory under load. At 30% full
 * collections come more often under load, each a short pause after incremental marking spread over the
 * requests in between.
 */
const OLD_GENERATION_GROWTH_PERCENT = 30;

/**
 * Turns off V8's allocation-site pretenuring and bounds the old generation's growth. Under load a request's
 * objects are often still alive when a young-generation collection comes (the request is waiting on its
 * upstream), so V8 judges the places that allocate them long-lived and allocates every later one there
 * straight into the old generation, where it dies at once but stays until the next full collection. That
 * garbage grew the old generation quickly under load. Both flags are read when V8
 * collects, so setting them at start-up takes effect.
 */
export function applyServingV8Flags(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
  setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
}
