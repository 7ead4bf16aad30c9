/**
 * CI runs the whole suite on the embedded database, then the integration tests on a PostgreSQL server. Slow tests whose
 * outcome does not depend on which database holds the data (the bad-input corpus, the browser walk, the
 * fault and leak counts) need to run only once, and so do the cluster tests, which run on the server in both:
 * the second run sets GW_TEST_SKIP_REPEATED=1 and they skip.
 * A developer's `npm test` runs everything.
 */

/** A `skip` option: the reason when this run leaves database-independent slow tests out, else false. */
export const SKIP_IN_REPEATED_RUN: string | false =
  process.env["GW_TEST_SKIP_REPEATED"] === "1" ? "slow and independent of the database: ran in the first run (GW_TEST_SKIP_REPEATED=1)" : false;
