/**
 * Field readers for the snake_case wire JSON that the admin API and the config file share for providers
 * and virtual keys. Each throws a 400 naming the field's full path, so the API and a bad config file get
 * the same message.
 */
import { invalidField } from "../errors.js";

/** A JSON object from the wire. */
export type Wire = Record<string, unknown>;

/** True for a plain JSON object. */
export function isWire(value: unknown): value is Wire {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A list of strings; absent is []. */
export function stringList(value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === "string")) {
    throw invalidField(path, "must be a list of strings");
  }
  return [...value];
}

/** A string map; absent is {}. */
export function stringMap(value: unknown, path: string, example: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isWire(value) || !Object.values(value).every((v) => typeof v === "string")) throw invalidField(path, `must map names to strings, e.g. ${example}`);
  return { ...(value as Record<string, string>) };
}

/** A number; absent is `fallback`. */
export function numberField(value: unknown, path: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number") throw invalidField(path, `must be a number, got ${JSON.stringify(value)}`);
  return value;
}

/** A weight: finite and >= 0, 1 when absent. */
export function weightField(value: unknown, path: string): number {
  const weight = numberField(value, path, 1);
  if (!(Number.isFinite(weight) && weight >= 0)) throw invalidField(path, `must be a finite number >= 0, got ${weight}`);
  return weight;
}

/** A required non-empty string. */
export function requiredString(value: unknown, path: string, hint: string): string {
  if (typeof value !== "string" || value.trim() === "") throw invalidField(path, `is required: ${hint}`);
  return value;
}

/** Refuses a value that goes out as an HTTP header when it holds a line break or NUL, which no header may carry. */
export function checkHeaderValue(value: string, path: string): void {
  if (/[\r\n\0]/.test(value)) throw invalidField(path, "must not contain line breaks or NUL characters: it is sent as a header");
}

/** An optional http(s) URL; "" and absent are null. */
export function httpUrl(value: unknown, path: string): string | null {
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string") throw invalidField(path, "must be an http:// or https:// URL");
  // The URL parser drops tabs and line breaks and trims spaces, so such a value would be kept but another used.
  if (/[\u0000-\u0020\u007f]/.test(value)) throw invalidField(path, `${JSON.stringify(value)} contains whitespace or control characters; use an http:// or https:// URL without them`);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw invalidField(path, `"${value}" is not a URL; use an http:// or https:// URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw invalidField(path, `"${value}" must use http:// or https://`);
  return value;
}
