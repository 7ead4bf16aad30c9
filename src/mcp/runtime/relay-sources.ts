/**
 * What the /mcp/<client> relay reaches each client by: its live configuration and refusal, its screened
 * tools, the tool guardrails and quarantine on its links, the caller's credential for a new upstream
 * session, and the metric of each relayed request.
 */
import type { ClientRuntime } from "../client-runtime.js";
import type { RelaySource } from "../relay/relay-source.js";
import { guardedLink } from "../tool-guardrails/guarded-link.js";
import { toolCallGuard } from "../tool-guardrails/tool-call-guard.js";
import { refusalOf } from "./call-refusals.js";
import type { CallerCredentials } from "./caller-credentials.js";
import type { RuntimeState } from "./runtime-state.js";
import type { ToolCatalog } from "./tool-catalog.js";

/** Builds and keeps the relay's view of each client. */
export class RelaySources {
  /** What the /mcp/<client> relay reaches each client by, built once per client. */
  private readonly sources = new WeakMap<ClientRuntime, RelaySource>();

  constructor(
    private readonly state: RuntimeState,
    private readonly catalog: ToolCatalog,
    private readonly callerCredentials: CallerCredentials,
  ) {}

  /** The client named `name` as the /mcp/<client> relay reaches it; undefined when this runtime holds none. */
  of(name: string): RelaySource | undefined {
    const client = this.state.byName(name);
    return client ? this.sourceOf(client) : undefined;
  }

  /** Every client this runtime holds as the relay reaches it. */
  all(): RelaySource[] {
    return [...this.state.clients.values()].map((client) => this.sourceOf(client));
  }

  /** The client's relay view, built on first use. */
  private sourceOf(client: ClientRuntime): RelaySource {
    let source = this.sources.get(client);
    if (source === undefined) {
      source = this.build(client);
      this.sources.set(client, source);
    }
    return source;
  }

  /** The relay's view of one client, reading its configuration live. */
  private build(client: ClientRuntime): RelaySource {
    const { deps, timing } = this.state;
    const opts = () => ({ timeoutMs: timing.operationTimeoutMs });
    return {
      clientId: client.id,
      get spec() {
        return client.spec;
      },
      // Why the client refuses calls now, as execute() decides it, or null when it takes them.
      refusal: () => refusalOf(client, deps.states)?.message ?? null,
      tools: () => this.catalog.visibleTools(client),
      guard: (link, caller) =>
        guardedLink(link, {
          screened: () => this.catalog.screened(client.id),
          guard: (tool, signal) => (deps.guardrails ? toolCallGuard(deps.guardrails, { clientId: client.id, clientName: client.spec.name, tool, virtualKeyId: caller.virtualKeyId ?? "", signal }) : null),
        }),
      requestTimeoutMs: () => deps.settings.toolManager.toolExecutionTimeoutMs,
      serverRequestTimeoutMs: () => deps.settings.client.mcpRelayRequestTimeoutMs,
      open: async (caller, capabilities) => client.openFor(await this.callerCredentials.of(client, caller), capabilities, opts()),
      shared: () => client.sharedSession(opts()),
      operationDone: (method, tool, durationS, errorType, governance) =>
        deps.metrics?.recordMcpToolCall({ mcpClient: client.spec.name, toolName: tool, mcpMethod: method, durationS, errorType, ...(governance ? { governance } : {}) }),
    };
  }
}
