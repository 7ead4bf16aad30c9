/**
 * Hands a traced request's span node from the HTTP layer to the RPC that serves it. An RPC's context is
 * built from its headers alone (the REST bridge calls through an in-process transport), so the node is
 * filed under a random reference sent in a header that the HTTP layer always removes from what the client
 * sent and sets itself: a client can neither choose nor guess a reference. Untraced requests file nothing.
 */
import { randomUUID } from "node:crypto";
import type { TraceNode } from "./tracing.js";

/** Request header holding the reference; whatever a client sent under this name is dropped. */
export const TRACE_REF_HEADER = "gw-trace-ref";

// Module-wide on purpose: every app in a process (tests run several) hands off through random references.
const filed = new Map<string, TraceNode>();

/** Files `node` for the RPC about to run and returns its reference; `withdrawTrace` it when the call ends. */
export function fileTrace(node: TraceNode): string {
  const ref = randomUUID();
  filed.set(ref, node);
  return ref;
}

/** The node filed under `ref`, if it is still filed. */
export function filedTrace(ref: string | null): TraceNode | undefined {
  return ref === null ? undefined : filed.get(ref);
}

/** Forgets a reference once its call has ended. */
export function withdrawTrace(ref: string): void {
  filed.delete(ref);
}
