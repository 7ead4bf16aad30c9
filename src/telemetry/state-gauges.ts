/**
 * What the state gauges (gw_active_requests, gw_provider_key_up, gw_route_state) show. It is state, not
 * a count of events, so it lives outside prom-client: a change of the custom labels re-creates every
 * metric, and the gauges of the new registry read the same state.
 */
import type { LabelCap } from "./label-cap.js";
import type { Labels } from "./metric-families.js";

/** One route as gw_route_state shows it. */
export interface RouteStateSample {
  provider: string;
  /** "" for a provider route. */
  keyId: string;
  keyName: string;
  state: string;
}

/** The state behind the gauges, kept outside prom-client so it survives a registry rebuild. */
export class StateGauges {
  /** label-key -> labels (own + custom) and the number in flight. */
  readonly active = new Map<string, { labels: Labels; value: number }>();
  readonly keyUp = new Map<string, { labels: Labels; value: number }>();
  /** Reads the load balancer's routes at scrape time; none until the inference state registers it. */
  routeStates: (() => Iterable<RouteStateSample>) | null = null;

  constructor(private readonly cap: () => LabelCap) {}

  /** The labels of `names` plus the current custom labels, capped. */
  project(labels: Labels, names: readonly string[], custom: readonly string[]): Labels {
    const out: Labels = {};
    const cap = this.cap();
    for (const name of names) out[name] = cap.admit(name, labels[name] ?? "");
    for (const name of custom) out[name] = cap.admit(name, labels[name] ?? "");
    return out;
  }
}
