/** Reading x-gw-dim-<label> and legacy x-gw-prom-<label> headers. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { NO_DIMENSIONS, readDimensions } from "../../src/telemetry/dimensions.js";

test("a dim header gives its configured label a value", () => {
  const dims = readDimensions({ "x-gw-dim-team": "search" }, ["team"]);
  assert.deepEqual(dims.metricValues, { team: "search" });
});

test("a legacy prom header still gives a metric value", () => {
  const dims = readDimensions({ "x-gw-prom-team": "ads" }, ["team"]);
  assert.deepEqual(dims.metricValues, { team: "ads" });
});

test("the dim header wins over the legacy header for the same label", () => {
  const dims = readDimensions({ "x-gw-prom-team": "old", "x-gw-dim-team": "new" }, ["team"]);
  assert.deepEqual(dims.metricValues, { team: "new" });
});

test("a dim header for a label that is not configured goes to logs only", () => {
  const dims = readDimensions({ "x-gw-dim-env": "prod" }, ["team"]);
  assert.deepEqual(dims.metricValues, {});
  assert.deepEqual(dims.logValues, { env: "prod" });
});

test("legacy headers do not reach the log values", () => {
  const dims = readDimensions({ "x-gw-prom-team": "ads" }, ["team"]);
  assert.deepEqual(dims.logValues, {});
});

test("configured labels with capitals match their lower-case header", () => {
  const dims = readDimensions({ "x-gw-dim-team": "a" }, ["Team"]);
  assert.deepEqual(dims.metricValues, { Team: "a" });
});

test("rejects a dim header named like a reserved label, naming the header", () => {
  assert.throws(
    () => readDimensions({ "x-gw-dim-path": "x" }, []),
    (err: unknown) => err instanceof GatewayError && err.code === "invalid_argument" && err.field === "x-gw-dim-path" && /x-gw-dim-path/.test(err.message) && /reserved/.test(err.message),
  );
});

test("rejects a dim header whose label is not a valid label name", () => {
  assert.throws(() => readDimensions({ "x-gw-dim-my-team": "x" }, []), (err: unknown) => err instanceof GatewayError && err.field === "x-gw-dim-my-team");
});

test("headers without dimensions give the shared empty value", () => {
  assert.equal(readDimensions({ "content-type": "application/json" }, ["team"]), NO_DIMENSIONS);
});
