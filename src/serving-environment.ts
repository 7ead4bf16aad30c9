/**
 * The environment a serving gateway process starts with, beside its node flags (SERVING_NODE_FLAGS in
 * v8-flags.ts): settings the C library reads once, when the process starts, so the process cannot apply
 * them itself. `npm start`, the Dockerfile and the README's systemd unit set them (a test checks that they
 * agree).
 */

/**
 * At most two malloc arenas: the main thread's and one that V8's and libuv's background threads share.
 * glibc otherwise gives each thread that allocates an arena of its own (up to eight per core), and the
 * garbage collector's and compiler's helper threads each kept memory resident there, which raised the
 * gateway's peak RSS under load. One arena saves only a little more, with every thread taking the main
 * arena's lock.
 */
export const SERVING_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };
