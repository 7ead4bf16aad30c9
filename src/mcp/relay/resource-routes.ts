/**
 * Which member of a virtual server a resource URI belongs to: the member that listed it (the first by
 * client name when two listed the same URI), else the member whose resource template the URI fits.
 */

/** A URI template as a pattern: its literal parts as they are, each `{...}` expression anything. */
function templatePattern(template: string): RegExp {
  const parts = template.split(/\{[^}]*\}/);
  return new RegExp(`^${parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "s");
}

/** The routes of one session, as its resources and templates were last listed. */
export class ResourceRoutes {
  private readonly owners = new Map<string, string>();
  private templates: { client: string; pattern: RegExp }[] = [];

  /** Claims `uri` for `client`; false when an earlier client has it. */
  claim(uri: string, client: string): boolean {
    const owner = this.owners.get(uri);
    if (owner !== undefined && owner !== client) return false;
    this.owners.set(uri, client);
    return true;
  }

  /** Forgets what `clients` listed before they list again. */
  release(clients: readonly string[]): void {
    for (const [uri, owner] of this.owners) if (clients.includes(owner)) this.owners.delete(uri);
  }

  /** Replaces the templates of `client`. */
  setTemplates(client: string, templates: readonly string[]): void {
    this.templates = [...this.templates.filter((entry) => entry.client !== client), ...templates.map((template) => ({ client, pattern: templatePattern(template) }))];
  }

  /** The client a URI goes to, if any listing says. */
  ownerOf(uri: string): string | undefined {
    return this.owners.get(uri) ?? this.templates.find((entry) => entry.pattern.test(uri))?.client;
  }

  /** Whether `client` may be told about `uri` (a URI another member lists is that member's). */
  tells(uri: string, client: string): boolean {
    const owner = this.owners.get(uri);
    return owner === undefined || owner === client;
  }
}
