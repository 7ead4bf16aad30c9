/**
 * Tracing settings from the standard OpenTelemetry variables and the config file's telemetry.otlp, the
 * variables winning as they do in every OpenTelemetry SDK. No endpoint anywhere means tracing is off.
 */
import { GatewayError } from "../errors.js";
import { SAMPLER_NAMES, type OtlpTracingOptions, type SamplerName } from "./otlp-tracing.js";

/** The config file's telemetry.otlp section, as parsed. */
export interface OtlpFileSettings {
  endpoint: string;
  headers: Readonly<Record<string, string>>;
  sampleRatio: number | null;
  captureContent: boolean;
}

const TRACES_PATH = "/v1/traces";

function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, "")}${TRACES_PATH}`;
}

/** OTEL_EXPORTER_OTLP_HEADERS: `name=value,name2=value2`, values percent-encoded. */
function parseHeaders(text: string | undefined, variable: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (text === undefined || text.trim() === "") return out;
  for (const pair of text.split(",")) {
    if (pair.trim() === "") continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new GatewayError("invalid_argument", `${variable}: expected name=value pairs separated by commas`);
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new GatewayError("invalid_argument", `${variable}: a value is not valid percent-encoding`);
    }
    out[pair.slice(0, eq).trim().toLowerCase()] = value;
  }
  return out;
}

function checkUrl(text: string, variable: string): string {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new GatewayError("invalid_argument", `${variable}: not a URL; use http://collector:4318`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new GatewayError("invalid_argument", `${variable}: must be an http:// or https:// URL`);
  return text;
}

/**
 * The tracing options, or undefined when tracing is off. Throws a GatewayError naming the variable when
 * one is malformed, so a typo stops start-up instead of silently leaving tracing off.
 */
export function otlpOptionsFrom(file: OtlpFileSettings | undefined, env: NodeJS.ProcessEnv): OtlpTracingOptions | undefined {
  if ((env["OTEL_SDK_DISABLED"] ?? "").toLowerCase() === "true") return undefined;
  const tracesEndpoint = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"];
  const endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"];
  let url: string;
  if (tracesEndpoint) url = checkUrl(tracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  else if (endpoint) url = tracesUrl(checkUrl(endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"));
  else if (file && file.endpoint !== "") url = tracesUrl(file.endpoint);
  else return undefined;

  const samplerText = env["OTEL_TRACES_SAMPLER"];
  let sampler: SamplerName;
  if (samplerText) {
    if (!(SAMPLER_NAMES as readonly string[]).includes(samplerText)) {
      throw new GatewayError("invalid_argument", `OTEL_TRACES_SAMPLER: "${samplerText}" is not one of ${SAMPLER_NAMES.join(", ")}`);
    }
    sampler = samplerText as SamplerName;
  } else {
    sampler = file?.sampleRatio != null ? "parentbased_traceidratio" : "parentbased_always_on";
  }
  const argText = env["OTEL_TRACES_SAMPLER_ARG"];
  let sampleRatio = file?.sampleRatio ?? 1;
  if (argText) {
    const ratio = Number(argText);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new GatewayError("invalid_argument", `OTEL_TRACES_SAMPLER_ARG: "${argText}" is not a ratio between 0 and 1`);
    sampleRatio = ratio;
  }
  return {
    url,
    headers: {
      ...(file?.headers ?? {}),
      ...parseHeaders(env["OTEL_EXPORTER_OTLP_HEADERS"], "OTEL_EXPORTER_OTLP_HEADERS"),
      ...parseHeaders(env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"], "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
    },
    serviceName: env["OTEL_SERVICE_NAME"] || "gw",
    sampler,
    sampleRatio,
    captureContent: file?.captureContent ?? false,
  };
}
