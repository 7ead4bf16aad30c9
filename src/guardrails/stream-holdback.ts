/**
 * Guarding a stream of output text. Text is held back until at least `window` characters follow it, and a
 * finding is acted on only once it lies in that settled part: a match that spans chunk boundaries is then
 * whole before any of it is released, and one that the next chunk could still extend or undo (a keyword
 * that turns out to be part of a longer word, a card number that goes on) is not acted on too early.
 * A finding that reaches into the unsettled end holds everything from its start, so a long secret still
 * arriving (a private key, a JWT) is not released in part: the built-in patterns match within the first
 * hundred or so characters of a token and then keep matching to the end of the text while the token goes
 * on. A window shorter than a pattern needs to match at all can release the start of a token. The held
 * text is bounded by `maxHold`; beyond it the oldest text is released even through such a finding (its
 * released part redacted).
 *
 * Scanning runs once `batch` characters have arrived beyond the window, not on every chunk: each scan then
 * releases at least `batch` characters, so the cost stays proportional to the text. A few released
 * characters are kept as context for the next scan, so that a pattern's view of what precedes a match (a
 * digit before a number, the label before an AWS key) is the same as in the whole text.
 *
 * Pure and synchronous: the caller feeds chunks and sends on what comes back.
 */
import { GatewayError } from "../errors.js";
import { invalidCheck, type ContentCheck } from "./check-types.js";
import { canRedact, redactSpans, type RedactionOptions, type RedactionSpan } from "./redaction.js";

/** What a guardrail does when its check finds something. */
export type GuardrailAction = "block" | "redact" | "warn";

/** One guardrail applied to the stream; guardrails are listed in the order their redactions take precedence. */
export interface StreamGuard {
  /** Names the guardrail in the block decision and the outcomes. */
  readonly name: string;
  readonly check: ContentCheck;
  readonly action: GuardrailAction;
  /** For `redact`; default: replace with `[REDACTED:<kind>]`. */
  readonly redaction?: RedactionOptions;
}

/** Sizes, in UTF-16 code units. */
export interface StreamHoldbackOptions {
  /** How far behind the end text must be before it is released; default 256. */
  readonly window?: number;
  /** How much new text beyond the window starts a scan; default 32. */
  readonly batch?: number;
  /** The most text held back, even while a finding is still open at the end; default 65536. */
  readonly maxHold?: number;
}

/** Why the stream was stopped. */
export interface StreamBlock {
  readonly guardrail: string;
  readonly kind: string;
}

/** What a chunk (or the end) releases: `text` may be sent on; with `block` set the stream must end with an error. */
export interface StreamRelease {
  readonly text: string;
  readonly block: StreamBlock | null;
}

/** A guardrail's outcome on the stream so far. */
export type StreamOutcome = "pass" | "warn" | "redact" | "block";

/** Characters of released text kept for the next scan: enough for the labels patterns read before a value. */
const CONTEXT = 64;

const NOTHING: StreamRelease = Object.freeze({ text: "", block: null });

/** A stream redactor over one stream's text. */
export class StreamHoldback {
  readonly #guards: readonly StreamGuard[];
  readonly #window: number;
  readonly #batch: number;
  readonly #maxHold: number;
  readonly #outcomes = new Map<string, StreamOutcome>();
  /** Milliseconds each guard's check has spent scanning, by guard. */
  readonly #spentMs: number[];
  #context = "";
  #pending = "";
  /** Length of the pending text at the last scan that released nothing, so an open finding is not rescanned per chunk. */
  #scannedAt = 0;
  #block: StreamBlock | null = null;
  #ended = false;

  /** Guards a stream with `guards`; refuses a `redact` guard whose check cannot redact, and sizes that are not positive integers. */
  constructor(guards: readonly StreamGuard[], options: StreamHoldbackOptions = {}) {
    guards.forEach((g, i) => {
      if (g.action === "redact" && !canRedact(g.check.type)) {
        throw invalidCheck(`guardrails[${i}].action`, `a ${g.check.type} check cannot redact; use block or warn`);
      }
      this.#outcomes.set(g.name, "pass");
    });
    this.#guards = guards;
    this.#spentMs = guards.map(() => 0);
    this.#window = positive(options.window ?? 256, "window");
    this.#batch = positive(options.batch ?? 32, "batch");
    this.#maxHold = positive(options.maxHold ?? 65_536, "maxHold");
    if (this.#maxHold < this.#window) throw new GatewayError("invalid_argument", "maxHold: must be at least the window", { field: "maxHold" });
  }

  /** Takes the next chunk; answers what may be sent now. */
  push(chunk: string): StreamRelease {
    if (this.#ended) return this.#afterEnd();
    this.#pending += chunk;
    const length = this.#pending.length;
    if (length < this.#window + this.#batch || length < this.#scannedAt + this.#batch) return NOTHING;
    return this.#release(false);
  }

  /** Ends the stream: everything still held is scanned as final and answered. */
  flush(): StreamRelease {
    if (this.#ended) return this.#afterEnd();
    const released = this.#release(true);
    this.#ended = true;
    return released;
  }

  /** Each guardrail's outcome so far: `pass` until its check found something in released (or blocked) text. */
  outcomes(): ReadonlyMap<string, StreamOutcome> {
    return this.#outcomes;
  }

  /** The seconds each guardrail's check has spent scanning so far, by name. */
  secondsSpent(): ReadonlyMap<string, number> {
    return new Map(this.#guards.map((guard, i) => [guard.name, (this.#spentMs[i] ?? 0) / 1000]));
  }

  #afterEnd(): StreamRelease {
    return this.#block === null ? NOTHING : { text: "", block: this.#block };
  }

  #release(final: boolean): StreamRelease {
    const pending = this.#pending;
    const offset = this.#context.length;
    const scanned = this.#context + pending;
    // Each guard's findings, in the coordinates of the pending text; those wholly in the context were dealt with.
    const found = this.#guards.map((guard, i) => {
      const started = performance.now();
      const findings = guard.check.scan(scanned);
      this.#spentMs[i] = (this.#spentMs[i] ?? 0) + performance.now() - started;
      return findings.filter((f) => f.end > offset).map((f) => ({ kind: f.kind, start: f.start - offset, end: f.end - offset }));
    });
    const cut = final ? pending.length : this.#settledEnd(found, pending.length);
    if (cut <= 0) {
      this.#scannedAt = pending.length;
      return NOTHING;
    }
    const spans: RedactionSpan[] = [];
    for (const [i, guard] of this.#guards.entries()) {
      const settled = (found[i] ?? []).filter((f) => f.start < cut);
      if (settled.length === 0) continue;
      if (guard.action === "block") {
        const first = settled[0];
        this.#block = { guardrail: guard.name, kind: first?.kind ?? "" };
        this.#outcomes.set(guard.name, "block");
        this.#ended = true;
        return { text: "", block: this.#block };
      }
      if (guard.action === "warn") {
        if (this.#outcomes.get(guard.name) === "pass") this.#outcomes.set(guard.name, "warn");
        continue;
      }
      this.#outcomes.set(guard.name, "redact");
      const options = guard.redaction ?? { strategy: "replace" };
      for (const f of settled) spans.push({ kind: f.kind, start: Math.max(0, f.start), end: Math.min(cut, f.end), options });
    }
    const released = pending.slice(0, cut);
    this.#pending = pending.slice(cut);
    this.#context = (this.#context + released).slice(-CONTEXT);
    this.#scannedAt = 0;
    return { text: redactSpans(released, spans), block: null };
  }

  /** Where the settled part ends: `window` before the end, moved back to the start of any finding reaching past it. */
  #settledEnd(found: readonly { start: number; end: number }[][], length: number): number {
    let cut = length - this.#window;
    for (let moved = true; moved && cut > 0; ) {
      moved = false;
      for (const findings of found) {
        for (const f of findings) {
          if (f.start < cut && f.end > cut) {
            cut = f.start;
            moved = true;
          }
        }
      }
    }
    // An open finding may hold text only up to maxHold; beyond it the oldest text goes out anyway.
    cut = Math.max(cut, length - this.#maxHold);
    // Never between the two halves of a character outside the BMP: each release is encoded on its own.
    const last = this.#pending.charCodeAt(cut - 1);
    return last >= 0xd800 && last <= 0xdbff ? cut - 1 : cut;
  }
}

function positive(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) throw new GatewayError("invalid_argument", `${field}: must be a positive integer`, { field });
  return value;
}
