/**
 * The origin (scheme://host) a request reached the gateway by, so a submission URL can point back at
 * this gateway when client.mcp_external_client_url is not set. The HTTP handler reads it once per request
 * and it travels explicitly (ExecuteOptions.origin), never through an AsyncLocalStorage scope.
 */

/** Host names and ports only: anything else in a Host header is not put into a URL. */
const HOST_PATTERN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

function first(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  return text?.split(",")[0]?.trim() || undefined;
}

/** The origin a request's headers name (X-Forwarded-Host/-Proto, Host, :authority), or null. */
export function originOfHeaders(headers: HeaderBag): string | null {
  const host = first(headers["x-forwarded-host"]) ?? first(headers["host"]) ?? first(headers[":authority"]);
  if (host === undefined || !HOST_PATTERN.test(host)) return null;
  const proto = first(headers["x-forwarded-proto"])?.toLowerCase();
  return `${proto === "https" ? "https" : "http"}://${host}`;
}
