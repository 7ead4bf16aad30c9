/**
 * prom-client's default process and Node.js metrics (process_*, nodejs_*) and gw_build_info, in a
 * registry of their own: they carry no custom labels, so they survive a change of the custom label
 * list untouched, and they are collected at scrape time only.
 */
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import pkg from "../../package.json" with { type: "json" };

/** The gateway's version, as package.json gives it. */
export const GATEWAY_VERSION: string = pkg.version;

/**
 * Default metrics left out: gauges named like counters, which promtool flags; each is the sum of the
 * per-type gauge of the same name without `_total` (nodejs_active_handles, ...).
 */
const MISNAMED_GAUGES = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** A registry with the default process metrics and gw_build_info (always 1). */
export function createProcessRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_GAUGES) registry.removeSingleMetric(name);
  const info = new Gauge({
    name: "gw_build_info",
    help: "The gateway's build: its version and the Node.js version it runs on; the value is always 1.",
    labelNames: ["version", "node_version"],
    registers: [registry],
  });
  info.set({ version: GATEWAY_VERSION, node_version: process.version }, 1);
  return registry;
}
