/**
 * What a serving gateway process starts with that it cannot apply itself: node and V8 flags, which V8
 * reads when it sets up its heap and compilers, and settings the C library reads once, when the process
 * starts. `bin/gw-serve` gives all of them, and `npm start`, the Docker image and the systemd unit in
 * docs/operations.md run it (a test checks that they agree). None changes what the gateway does, only how the
 * runtime manages memory and compiles code.
 */

/**
 * The flags put right before `dist/main.js`:
 * - `--max-semi-space-size=4`: each half of the young generation may grow to 16 MB by default, and under
 *   load both are touched in full; at 4 MB peak RSS is lower for young collections four times as often, each
 *   as cheap (what survives one is the few requests in flight).
 * - `--no-allocation-site-pretenuring`: under load a request's objects are often alive at a young
 *   collection (the request waits on its upstream), so V8 would judge their allocation sites long-lived and
 *   allocate every later one straight into the old generation, where it dies at once but stays until the
 *   next full collection.
 * - `--heap-growing-percent=30`: how far the old generation may grow past what the last full collection
 *   kept; V8 otherwise picks a factor up to 4 for a small live heap, and the dead request objects that fill
 *   it meanwhile were most of the peak resident memory under load.
 * - `--no-maglev`: Node 24's V8 compiles warm functions with Maglev, a tier between the baseline code and
 *   TurboFan that Node 20's V8 leaves off; under load its code and compile work kept much more memory
 *   resident for no steady-state gain, since the hot request path ends in TurboFan either way.
 * - `--no-parallel-scavenge`: a young collection of a 4 MB semi-space copies only the few requests in flight,
 *   less work than handing it out to helper threads and waiting for them, which on a busy machine also take
 *   cores from the serving thread; the scavenges run on the serving thread alone. Concurrent marking of the
 *   old generation stays on its helper thread.
 */
export const SERVING_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=4", "--no-allocation-site-pretenuring", "--heap-growing-percent=30", "--no-maglev", "--no-parallel-scavenge"];

/**
 * Added after SERVING_NODE_FLAGS when the gateway runs on the embedded database (GW_DATABASE_URL unset):
 * - `--liftoff-only`: WebAssembly runs in V8's baseline compiler. The embedded database is one large module;
 *   tiering its hot functions up with TurboFan kept much more memory resident and, on few cores, slowed
 *   start-up more than it sped queries. On a PostgreSQL server there is no such module, and the WebAssembly
 *   left, undici's HTTP parser, runs on every upstream answer: there it is left free to tier up.
 */
export const EMBEDDED_DATABASE_NODE_FLAGS: readonly string[] = ["--liftoff-only"];

/**
 * What to tell an operator whose gateway serves on a PostgreSQL server with the embedded database's flags (the
 * launcher reads only GW_DATABASE_URL, so a server named by the config file's database.url starts with them, as
 * does a unit that names the flags itself). Undefined when the flags fit the database.
 */
export function embeddedFlagsOnServer(execArgv: readonly string[], databaseUrl: string | undefined): string | undefined {
  if (databaseUrl === undefined || databaseUrl === "") return undefined;
  // A later `--no-<flag>` wins over the flag, as V8 reads them in order.
  const kept = EMBEDDED_DATABASE_NODE_FLAGS.filter((flag) => execArgv.lastIndexOf(flag) > execArgv.lastIndexOf(flag.replace(/^--/, "--no-")));
  if (kept.length === 0) return undefined;
  return (
    `serving on a PostgreSQL server with ${kept.join(" ")}, the embedded database's node flags, which slow the parsing of upstream answers: ` +
    "start the gateway through bin/gw-serve (npm start) with the server in GW_DATABASE_URL, which it reads to leave them out (it does not read database.url in the config file)"
  );
}

/** The node flags a gateway serves with: on the embedded database, or on a PostgreSQL server. */
export function servingNodeFlags(embeddedDatabase: boolean): readonly string[] {
  return embeddedDatabase ? [...SERVING_NODE_FLAGS, ...EMBEDDED_DATABASE_NODE_FLAGS] : SERVING_NODE_FLAGS;
}

/**
 * At most two malloc arenas: the main thread's and one that V8's and libuv's background threads share.
 * glibc otherwise gives each thread that allocates an arena of its own (up to eight per core), and the
 * garbage collector's and compiler's helper threads each kept memory resident there, which raised the
 * gateway's peak RSS under load. One arena saves only a little more, with every thread taking the main
 * arena's lock.
 */
export const SERVING_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };
