import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { GatewayError } from "../../src/errors.js";
import { otlpOptionsFrom, type OtlpFileSettings } from "../../src/telemetry/otlp-settings.js";

const FILE: OtlpFileSettings = { endpoint: "http://collector:4318", headers: { "x-team": "file" }, sampleRatio: 0.5, captureContent: true };

function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError, String(err));
    return err.message;
  }
  assert.fail("expected a GatewayError");
}

describe("tracing settings", () => {
  test("are off without an endpoint in the environment or the file", () => {
    assert.equal(otlpOptionsFrom(undefined, {}), undefined);
    assert.equal(otlpOptionsFrom({ ...FILE, endpoint: "" }, {}), undefined);
  });

  test("take the file's endpoint, headers, ratio and capture_content", () => {
    assert.deepEqual(otlpOptionsFrom(FILE, {}), {
      url: "http://collector:4318/v1/traces",
      headers: { "x-team": "file" },
      serviceName: "gw",
      sampler: "parentbased_traceidratio",
      sampleRatio: 0.5,
      captureContent: true,
    });
  });

  test("let the OTEL_* variables win over the file", () => {
    const options = otlpOptionsFrom(FILE, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "x-team=env%20team,authorization=Basic%20abc",
      OTEL_SERVICE_NAME: "edge-gw",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.1",
    });
    assert.equal(options?.url, "http://env:4318/v1/traces");
    assert.deepEqual(options?.headers, { "x-team": "env team", authorization: "Basic abc" });
    assert.equal(options?.serviceName, "edge-gw");
    assert.equal(options?.sampler, "traceidratio");
    assert.equal(options?.sampleRatio, 0.1);
  });

  test("use OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as the full traces URL", () => {
    const options = otlpOptionsFrom(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom/traces" });
    assert.equal(options?.url, "http://b:4318/custom/traces");
    assert.equal(options?.sampler, "parentbased_always_on");
  });

  test("are off with OTEL_SDK_DISABLED=true", () => {
    assert.equal(otlpOptionsFrom(FILE, { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318" }), undefined);
  });

  test("refuse an unknown sampler, a ratio outside 0..1 and a malformed header list, naming the variable", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318" };
    assert.match(problem(() => otlpOptionsFrom(undefined, { ...env, OTEL_TRACES_SAMPLER: "sometimes" })), /^OTEL_TRACES_SAMPLER: "sometimes" is not one of/);
    assert.match(problem(() => otlpOptionsFrom(undefined, { ...env, OTEL_TRACES_SAMPLER_ARG: "2" })), /^OTEL_TRACES_SAMPLER_ARG:/);
    assert.match(problem(() => otlpOptionsFrom(undefined, { ...env, OTEL_EXPORTER_OTLP_HEADERS: "novalue" })), /^OTEL_EXPORTER_OTLP_HEADERS:/);
    assert.match(problem(() => otlpOptionsFrom(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://x:4317" })), /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/);
  });
});

describe("telemetry.otlp in the config file", () => {
  test("parses with its defaults", () => {
    assert.deepEqual(parseConfig({ telemetry: { otlp: { endpoint: "http://c:4318" } } }, {}).telemetry.otlp, { endpoint: "http://c:4318", headers: {}, sampleRatio: null, captureContent: false });
  });

  test("refuses an unknown key, naming the allowed ones", () => {
    assert.throws(() => parseConfig({ telemetry: { otlp: { endpoint: "http://c:4318", protocol: "grpc" } } }, {}), /telemetry\.otlp.*allowed keys: endpoint, headers, sample_ratio, capture_content/s);
  });

  test("refuses a sample_ratio above 1", () => {
    assert.throws(() => parseConfig({ telemetry: { otlp: { sample_ratio: 1.5 } } }, {}), /telemetry\.otlp\.sample_ratio: must be between 0 and 1/);
  });
});
