/**
 * The virtual MCP servers in memory, as /mcp/<name> serves them: each a name and the MCP clients it
 * offers parts of. The request path reads only this; admin writes, config reloads and other nodes'
 * changes replace entries in it.
 */
import { toolAllowed } from "../tool-names.js";

/** One client of a virtual server and which of its parts the server offers. */
export interface VirtualMember {
  /** The MCP client's name. */
  readonly client: string;
  /** ["*"] all, [] none, otherwise the named tools. */
  readonly tools: readonly string[];
  readonly resources: boolean;
  readonly prompts: boolean;
}

/** A checked virtual server. */
export interface VirtualServerDefinition {
  readonly name: string;
  readonly description: string;
  /** At least one, each client once. */
  readonly members: readonly VirtualMember[];
}

/** Whether a member offers `tool` of its client. */
export function memberOffersTool(member: VirtualMember, tool: string): boolean {
  return toolAllowed(member.tools, tool);
}

/** Every virtual server, by name. */
export class VirtualServers {
  private readonly byName = new Map<string, VirtualServerDefinition>();
  private readonly listeners = new Set<(name: string | null) => void>();

  /** Calls `listener` after a server is put or removed (its name), or all are replaced (null); returns the unsubscribe. */
  onChange(listener: (name: string | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(name: string | null): void {
    for (const listener of this.listeners) listener(name);
  }

  /** The server served at /mcp/<name>, if there is one. */
  get(name: string): VirtualServerDefinition | undefined {
    return this.byName.get(name);
  }

  /** The member for `client` of the server as it is now: sessions read it on every tool request, so an edit narrows them at once. */
  member(name: string, client: string): VirtualMember | undefined {
    return this.byName.get(name)?.members.find((member) => member.client === client);
  }

  put(definition: VirtualServerDefinition): void {
    this.byName.set(definition.name, definition);
    this.changed(definition.name);
  }

  remove(name: string): void {
    this.byName.delete(name);
    this.changed(name);
  }

  /** Replaces every entry (boot, reload, another node's change). */
  replaceAll(definitions: readonly VirtualServerDefinition[]): void {
    this.byName.clear();
    for (const definition of definitions) this.byName.set(definition.name, definition);
    this.changed(null);
  }

  get size(): number {
    return this.byName.size;
  }
}
