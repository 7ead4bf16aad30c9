/** Request headers as Node gives them: a string, a list of strings when repeated, or nothing. */
import type { IncomingHttpHeaders } from "node:http";

/** One header's value by lower-case name (the first when repeated). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = headers[name];
  return Array.isArray(raw) ? raw[0] : raw;
}

/** Reads the headers' values by lower-case name (the first when repeated). */
export function headerReader(headers: IncomingHttpHeaders): (name: string) => string | undefined {
  return (name) => headerValue(headers, name);
}
