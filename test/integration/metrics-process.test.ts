/** /metrics through the real app also carries prom-client's default process metrics and gw_build_info. */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, types, type Sample } from "../helpers/exposition.js";

let app: TestApp;
let text: string;
let samples: Sample[];

before(async () => {
  app = await startApp();
  text = await (await fetch(`${app.url}/metrics`)).text();
  samples = parseExposition(text);
});

after(async () => {
  await app.stop();
});

test("the default process metrics are exposed", () => {
  const seen = types(text);
  assert.equal(seen.get("process_cpu_user_seconds_total"), "counter");
  assert.equal(seen.get("process_resident_memory_bytes"), "gauge");
  assert.equal(seen.get("process_start_time_seconds"), "gauge");
});

test("the default Node.js metrics are exposed", () => {
  const seen = types(text);
  assert.equal(seen.get("nodejs_heap_size_used_bytes"), "gauge");
  assert.equal(seen.get("nodejs_eventloop_lag_seconds"), "gauge");
  assert.equal(seen.get("nodejs_gc_duration_seconds"), "histogram");
});

test("gw_build_info is 1, labelled with the package's version and the Node.js version", async () => {
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  const info = samples.filter((s) => s.name === "gw_build_info");
  assert.equal(info.length, 1);
  assert.deepEqual(info[0]?.labels, { version: pkg.version, node_version: process.version });
  assert.equal(info[0]?.value, 1);
});

test("the gateway's own metrics are still exposed beside them", () => {
  assert.equal(types(text).get("http_requests_total"), "counter");
});
