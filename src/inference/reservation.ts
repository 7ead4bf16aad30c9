/**
 * Limits: the room a request reserves in its virtual key's budgets and rate limits (and those of its team
 * and customer) before any upstream call, so concurrent requests, on any node, cannot all take the last of
 * it; and giving back what a request that spent nothing reserved.
 */
import { providerConfigOf, providerLimitError } from "../routing/governance-router.js";
import type { LimitHold, Refusal } from "../routing/limit-gate.js";
import type { WorstCase } from "../routing/hierarchy.js";
import type { VirtualKey } from "../routing/types.js";
import { levelError } from "./admission.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceRequest } from "./request-context.js";
import { lazyWorstCase } from "./worst-case.js";

/** What a request answered without an upstream call reserves against budgets and token limits. */
const SPENDS_NOTHING: WorstCase = { costUsd: 0, tokens: 0 };

/**
 * Reserves the routed request's worst case (an answer memory holds spends nothing: it reserves only its
 * place in the request rate limits); a promise only when the counters are shared between nodes.
 */
export function reserve(engine: Engine, req: InferenceRequest): Promise<void> | void {
  const { virtualKey, call } = req;
  if (virtualKey === null) return;
  const { inference } = engine;
  const primary = req.routed().primary;
  const mode = req.method === "responses" || req.method === "embedding" ? req.method : "chat";
  const worst = req.remembered !== null ? SPENDS_NOTHING : lazyWorstCase(call.body, mode, primary, inference.prices, call.rawBody?.text);
  const reserving = inference.gate.reserve(virtualKey, worst, providerConfigOf(virtualKey, primary.provider));
  if (reserving instanceof Promise) return reserving.then((reserved) => hold(req, virtualKey, reserved));
  hold(req, virtualKey, reserving);
}

function hold(req: InferenceRequest, virtualKey: VirtualKey, reserved: LimitHold | Refusal): void {
  if ("owner" in reserved) throw levelError(reserved);
  if ("config" in reserved) throw providerLimitError(virtualKey, [reserved.limit], req.routed().primary.model);
  req.hold = reserved;
}

/** Gives back what the request reserved when it spent nothing (a cache hit, or no upstream answered). */
export function releaseUnspent(engine: Engine, req: InferenceRequest): void {
  if (req.hold !== null) engine.inference.gate.settle(req.hold, 0, 0);
}
