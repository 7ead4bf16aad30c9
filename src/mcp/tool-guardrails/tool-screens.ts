/**
 * What callers may see of each client's tools: every discovered list is screened before it is offered. A
 * tool that a tool_definition guardrail blocks, or whose definition no longer matches its pin
 * (tool_pinning), is quarantined: hidden from every listing and refused, with the reason the admin API
 * shows. A tool first seen by a pinning client is pinned. A screen is redone when the tools, the pins, the
 * pinning setting or the applicable guardrails change, and not otherwise, so a periodic sync that finds the
 * same tools costs nothing. Logs and counters name clients and tools, never the definitions' text.
 */
import { GatewayError } from "../../errors.js";
import type { GuardrailDefinition } from "../../guardrails/definition.js";
import type { Logger } from "../../telemetry/logger.js";
import type { DiscoveredTool } from "../upstream-session.js";
import type { ToolGuardrailDeps } from "./tool-call-guard.js";
import { screenDefinitions, type DefinitionVerdict } from "./tool-definitions.js";
import { definitionHash, PIN_CHANGED } from "./tool-pins.js";

/** A client's tools as callers may see them. */
export interface ScreenedTools {
  /** Tool name -> why it is quarantined. */
  readonly quarantined: ReadonlyMap<string, string>;
  /** The quarantined tools whose pin no longer matches (an approval can release these). */
  readonly pinChanged: ReadonlySet<string>;
  /** Tool name -> the definition callers see, where a guardrail redacted its descriptions. */
  readonly shown: ReadonlyMap<string, DiscoveredTool>;
}

/** The screen of a client with nothing quarantined or rewritten. */
export const NOTHING_SCREENED: ScreenedTools = Object.freeze({ quarantined: new Map<string, string>(), pinChanged: new Set<string>(), shown: new Map<string, DiscoveredTool>() });

/** One client as a screen reads it. */
export interface ScreenTarget {
  id: string;
  name: string;
  /** The client's tool_pinning. */
  pinning: boolean;
  tools: readonly DiscoveredTool[];
}

/** What screening needs of the gateway. */
export interface ToolScreenDeps {
  /** The guardrails; absent, only pinning screens. */
  guardrails?: ToolGuardrailDeps;
  logger: Logger;
  /**
   * Stores pins: with `replace`, over the stored ones (an approval); otherwise only for tools without one
   * (a pin stored meanwhile, by another node, wins). Resolves with every pin the client has stored.
   */
  storePins(clientId: string, pins: Record<string, string>, replace: boolean): Promise<Record<string, string>>;
  /** A pinned definition was found changed. */
  definitionChanged(client: ScreenTarget, tool: string): void;
  /** What some client's callers may see changed. */
  changed(): void;
}

interface ClientScreen {
  readonly result: ScreenedTools;
  /** The inputs the result was made from, but the guardrails. */
  readonly key: string;
  readonly guardrails: readonly GuardrailDefinition[];
  /** Tool name -> the definition hash found not matching its pin, so one change is reported once. */
  readonly mismatches: ReadonlyMap<string, string>;
}

function sameList(a: readonly GuardrailDefinition[], b: readonly GuardrailDefinition[]): boolean {
  return a.length === b.length && a.every((guardrail, index) => guardrail === b[index]);
}

function samePins(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

function isPins(value: unknown): value is Record<string, string> {
  return value !== null && typeof value === "object" && !Array.isArray(value) && Object.values(value).every((hash) => typeof hash === "string");
}

/** The tools callers may see: without the quarantined ones, with redacted descriptions where a guardrail redacted. */
export function visibleTools(tools: readonly DiscoveredTool[], screened: ScreenedTools): readonly DiscoveredTool[] {
  if (screened === NOTHING_SCREENED) return tools;
  return tools.filter((tool) => !screened.quarantined.has(tool.name)).map((tool) => screened.shown.get(tool.name) ?? tool);
}

/** Reads a stored pin map, ignoring anything that is not one. */
export function pinsOf(value: unknown): Record<string, string> {
  return isPins(value) ? { ...value } : {};
}

/** The screens of every client. */
export class ToolScreens {
  readonly #screens = new Map<string, ClientScreen>();
  readonly #pins = new Map<string, Record<string, string>>();
  /** The newest screen started per client: an older one that ends later is dropped. */
  readonly #latest = new Map<string, number>();
  #started = 0;

  constructor(private readonly deps: ToolScreenDeps) {}

  /** What the client's callers may see (everything when it was never screened). */
  of(clientId: string): ScreenedTools {
    return this.#screens.get(clientId)?.result ?? NOTHING_SCREENED;
  }

  /** Takes the pins the store holds for a client. */
  setPins(clientId: string, pins: Record<string, string>): void {
    this.#pins.set(clientId, { ...pins });
  }

  /** Forgets a removed client. */
  forget(clientId: string): void {
    this.#screens.delete(clientId);
    this.#pins.delete(clientId);
    this.#latest.delete(clientId);
  }

  /** Screens a client's tools; resolves once what its callers may see is decided. Never rejects. */
  async screen(target: ScreenTarget): Promise<void> {
    try {
      await this.#screen(target);
    } catch (err) {
      this.deps.logger.error({ err, client_id: target.id, client: target.name }, "could not screen the MCP client's tools");
    }
  }

  /** Throws the 409 of a call of a quarantined tool. */
  refuseQuarantined(target: Pick<ScreenTarget, "id" | "name">, tool: string): void {
    const reason = this.of(target.id).quarantined.get(tool);
    if (reason === undefined) return;
    throw new GatewayError("failed_precondition", `tool "${tool}" of MCP client "${target.name}" is quarantined (${reason}): it is hidden from callers and refused until an admin releases it`, {
      type: "tool_quarantined",
      httpStatus: 409,
    });
  }

  /**
   * Pins the current definition of a tool its pin quarantined and screens the client again; answers why
   * the tool is still quarantined (a tool_definition guardrail blocks it), or null. A tool the client does
   * not have is a 404; one its pin did not quarantine a 400.
   */
  async approve(target: ScreenTarget, toolName: string): Promise<string | null> {
    const tool = target.tools.find((t) => t.name === toolName);
    if (tool === undefined) {
      throw new GatewayError("not_found", `MCP client "${target.name}" has no tool "${toolName}" (GET /api/mcp/client/${target.id} lists its tools)`, { type: "tool_not_found", field: "tool" });
    }
    const screened = this.of(target.id);
    if (!screened.pinChanged.has(toolName)) {
      const reason = screened.quarantined.get(toolName);
      const why =
        reason === undefined
          ? `it is not quarantined, so there is nothing to approve${target.pinning ? "" : " (the client does not pin tool definitions: tool_pinning is false)"}`
          : `it is quarantined by a tool_definition guardrail (${reason}), not by its pin; approving pins definitions only, so change or disable the guardrail instead`;
      throw new GatewayError("invalid_argument", `tool "${toolName}" of MCP client "${target.name}": ${why}`, { type: "tool_not_quarantined", field: "tool" });
    }
    const stored = await this.deps.storePins(target.id, { [tool.name]: definitionHash(tool) }, true);
    this.#pins.set(target.id, stored);
    await this.#screen(target);
    this.deps.logger.info({ client_id: target.id, client: target.name, tool: toolName }, "MCP tool definition approved and pinned");
    return this.of(target.id).quarantined.get(toolName) ?? null;
  }

  async #screen(target: ScreenTarget): Promise<void> {
    const guardrails = this.#guardrailsOf(target.id);
    const previous = this.#screens.get(target.id);
    if (!target.pinning && guardrails.length === 0) {
      // Nothing to screen by: the common case does no work at all.
      this.#latest.set(target.id, ++this.#started);
      if (previous === undefined) return;
      this.#screens.delete(target.id);
      this.#report(target, previous, new Map(), NOTHING_SCREENED);
      return;
    }
    const pins = this.#pins.get(target.id) ?? {};
    const key = JSON.stringify([target.name, target.pinning, target.pinning ? pins : null, target.tools]);
    if (previous !== undefined && previous.key === key && sameList(previous.guardrails, guardrails)) return;
    const started = ++this.#started;
    this.#latest.set(target.id, started);
    const fresh: Record<string, string> = {};
    const mismatches = new Map<string, string>();
    if (target.pinning) {
      for (const tool of target.tools) {
        const hash = definitionHash(tool);
        const pin = pins[tool.name];
        if (pin === undefined) fresh[tool.name] = hash;
        else if (pin !== hash) mismatches.set(tool.name, hash);
      }
    }
    const definitions = guardrails.length === 0 || this.deps.guardrails === undefined ? null : await screenDefinitions(this.deps.guardrails, guardrails, target.name, target.tools);
    if (this.#latest.get(target.id) !== started) return;
    const merged = { ...fresh, ...pins };
    const result = this.#result(target, mismatches, definitions);
    this.#pins.set(target.id, merged);
    this.#screens.set(target.id, { result, key: JSON.stringify([target.name, target.pinning, target.pinning ? merged : null, target.tools]), guardrails, mismatches });
    this.#report(target, previous, mismatches, result);
    if (Object.keys(fresh).length === 0) return;
    const stored = await this.deps.storePins(target.id, fresh, false);
    // Another node pinned a tool first, with a definition of its own: that pin is the one to compare with.
    if (this.#latest.get(target.id) === started && !samePins(stored, merged)) {
      this.#pins.set(target.id, stored);
      await this.#screen(target);
    }
  }

  /** The guardrails of the tool_definition stage that cover the client. */
  #guardrailsOf(clientId: string): readonly GuardrailDefinition[] {
    const snapshot = this.deps.guardrails?.guardrails.snapshot;
    if (snapshot === undefined || !snapshot.hasStage("tool_definition")) return [];
    return snapshot.applicable("tool_definition", { virtualKeyId: "", teamId: "", customerId: "", mcpClientId: clientId });
  }

  #result(target: ScreenTarget, mismatches: ReadonlyMap<string, string>, definitions: ReadonlyMap<string, DefinitionVerdict> | null): ScreenedTools {
    const quarantined = new Map<string, string>();
    const shown = new Map<string, DiscoveredTool>();
    for (const tool of target.tools) {
      const reasons: string[] = [];
      if (mismatches.has(tool.name)) reasons.push(PIN_CHANGED);
      const verdict = definitions?.get(tool.name);
      if (verdict?.blocked) reasons.push(verdict.blocked);
      if (reasons.length > 0) quarantined.set(tool.name, reasons.join("; "));
      else if (verdict?.shown) shown.set(tool.name, verdict.shown);
    }
    if (quarantined.size === 0 && shown.size === 0) return NOTHING_SCREENED;
    return { quarantined, pinChanged: new Set(mismatches.keys()), shown };
  }

  /** Logs what changed since the last screen, counts changed definitions, and tells the listings. */
  #report(target: ScreenTarget, previous: ClientScreen | undefined, mismatches: ReadonlyMap<string, string>, result: ScreenedTools): void {
    const before = previous?.result ?? NOTHING_SCREENED;
    const fields = { client_id: target.id, client: target.name };
    for (const [tool, hash] of mismatches) {
      if (previous?.mismatches.get(tool) !== hash) this.deps.definitionChanged(target, tool);
    }
    for (const [tool, reason] of result.quarantined) {
      if (before.quarantined.get(tool) !== reason) this.deps.logger.warn({ ...fields, tool, reason }, "MCP tool quarantined: hidden from callers and refused until released");
    }
    for (const tool of before.quarantined.keys()) {
      if (!result.quarantined.has(tool) && target.tools.some((t) => t.name === tool)) this.deps.logger.info({ ...fields, tool }, "MCP tool released from quarantine");
    }
    if (result !== before && (result.quarantined.size > 0 || before.quarantined.size > 0 || result.shown.size > 0 || before.shown.size > 0)) this.deps.changed();
  }
}
