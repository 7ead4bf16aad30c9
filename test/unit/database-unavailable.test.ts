/** Telling an unreachable database (a 503, try again) from a failed query (a real error). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isDatabaseUnavailable } from "../../src/store/index.js";

function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

test("a refused, reset or cut connection is the database being unavailable", () => {
  assert.equal(isDatabaseUnavailable(withCode("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED")), true);
  assert.equal(isDatabaseUnavailable(withCode("read ECONNRESET", "ECONNRESET")), true);
  assert.equal(isDatabaseUnavailable(new Error("Connection terminated unexpectedly")), true);
  assert.equal(isDatabaseUnavailable(new Error("Knex: Timeout acquiring a connection. The pool is probably full.")), true);
});

test("a server shutting down or refusing connections is the database being unavailable", () => {
  assert.equal(isDatabaseUnavailable(withCode("terminating connection due to administrator command", "57P01")), true);
  assert.equal(isDatabaseUnavailable(withCode("connection failure", "08006")), true);
});

test("a connection error wrapped by the ORM is recognised through its cause", () => {
  assert.equal(isDatabaseUnavailable(new Error("insert failed", { cause: withCode("read ECONNRESET", "ECONNRESET") })), true);
});

test("a failed query is not the database being unavailable", () => {
  assert.equal(isDatabaseUnavailable(withCode('relation "missing" does not exist', "42P01")), false);
  assert.equal(isDatabaseUnavailable(withCode("duplicate key value violates unique constraint", "23505")), false);
  assert.equal(isDatabaseUnavailable(new Error("something else")), false);
  assert.equal(isDatabaseUnavailable("a string"), false);
});
