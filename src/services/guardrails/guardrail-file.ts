/**
 * The config file's `guardrails`: checked when the file is loaded, as far as that can be done without the
 * store (a bad entry throws a 400 naming its path, so a bad file stops start-up), and kept as REST JSON
 * for seeding, which checks the rest (owners, providers, the egress policy) against the store.
 */
import type { GuardrailFileConfig } from "../../config/file-config.js";
import { invalidField } from "../../errors.js";
import { guardrailFromJson, parseGuardrail } from "./guardrail-input.js";

/** One entry's path, for messages. */
export function guardrailFilePath(index: number): string {
  return `guardrails[${index}]`;
}

/** Checks every entry of the file's `guardrails` and returns them as REST JSON, in order. */
export function guardrailsFromFile(entries: readonly GuardrailFileConfig[]): Record<string, unknown>[] {
  const ids = new Map<string, number>();
  const names = new Map<string, number>();
  return entries.map((entry, index) => {
    const path = guardrailFilePath(index);
    const { fields } = parseGuardrail(guardrailFromJson(entry, path), (field) => `${path}.${field}`);
    const sameId = ids.get(fields.id);
    if (sameId !== undefined) throw invalidField(`${path}.id`, `"${fields.id}" is also the id of ${guardrailFilePath(sameId)}`);
    const sameName = names.get(fields.name);
    if (sameName !== undefined) throw invalidField(`${path}.name`, `"${fields.name}" is also the name of ${guardrailFilePath(sameName)}; names are unique`);
    ids.set(fields.id, index);
    names.set(fields.name, index);
    return entry;
  });
}
