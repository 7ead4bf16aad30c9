/**
 * A feature's own metric families, kept in a file of their own rather than in the shared metric set: the
 * metrics install them in the registry they live in, and again in each fresh one a change of the custom
 * labels makes (their counters then restart with the others).
 */
import type { Registry } from "prom-client";
import type { LabelCap } from "./label-cap.js";

/** Families installed beside the gateway's own. */
export interface FamilyGroup {
  /** Creates the group's families with `custom` after their own labels, values capped by `cap`, and registers them in `registry`. */
  install(registry: Registry, custom: readonly string[], cap: LabelCap): void;
}
