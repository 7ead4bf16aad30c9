/**
 * Packages a deployment may never need are loaded only when it configures what needs them: a gateway
 * with one OpenAI provider and nothing else loads no OpenTelemetry SDK module, no Redis client and no
 * AWS signing code, in a process of its own (the test runner's own imports would blur the answer).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, test } from "node:test";
import { spawnGateway, ROOT } from "../helpers/gateway-process.js";

let loaded: string[] = [];

before(async () => {
  const probe = spawnGateway(process.execPath, ["--import", "tsx", join(ROOT, "test/fixtures/loaded-packages-probe.ts")]);
  assert.equal(await probe.exited, 0, probe.output());
  const line = probe.output().split("\n").find((l) => l.startsWith('{"statuses"'));
  assert.ok(line, probe.output());
  const report = JSON.parse(line) as { statuses: number[]; loaded: string[] };
  assert.deepEqual(report.statuses, [200, 200]);
  loaded = report.loaded;
});

test("loads no OpenTelemetry SDK module when tracing is not configured", () => {
  assert.ok(loaded.some((path) => path.includes("/@opentelemetry/api/")), "the probe saw no package at all: the check would prove nothing");
  assert.deepEqual(
    loaded.filter((path) => path.includes("/@opentelemetry/") && !path.includes("/@opentelemetry/api/")),
    [],
  );
});

test("loads no Redis client when Redis is not configured", () => {
  assert.deepEqual(loaded.filter((path) => path.includes("/node_modules/ioredis/")), []);
});

test("loads no AWS signing code when no Bedrock provider is configured", () => {
  assert.deepEqual(loaded.filter((path) => /\/node_modules\/@(aws-crypto|smithy)\//.test(path)), []);
});
