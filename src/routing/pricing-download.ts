/**
 * Reads a pricing datasheet from an http(s):// or file:// URL with a size cap that is checked while the
 * bytes arrive (a declared or on-disk size over the cap is refused before reading anything), so a huge
 * or endless answer never fills memory.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { egressFetch } from "../config/egress-connections.js";
import { egressDenial } from "../config/egress-policy.js";

/** A download that failed; `transient` says whether trying again may help (network errors, 5xx, 429). */
export class PricingDownloadError extends Error {
  readonly transient: boolean;

  constructor(message: string, transient: boolean, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "PricingDownloadError";
    this.transient = transient;
  }
}

/** Limits of one download. */
export interface DownloadLimits {
  maxBytes: number;
  timeoutMs: number;
}

function tooLarge(what: string, maxBytes: number): PricingDownloadError {
  return new PricingDownloadError(`${what} is larger than the ${Math.round(maxBytes / 1024 / 1024)} MiB pricing file limit`, false);
}

async function collect(chunks: AsyncIterable<Uint8Array>, maxBytes: number, onTooLarge: () => void): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      onTooLarge();
      throw tooLarge("the pricing file", maxBytes);
    }
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts).toString("utf8");
}

async function readFileUrl(url: URL, limits: DownloadLimits): Promise<string> {
  const path = fileURLToPath(url);
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    throw new PricingDownloadError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, false, err);
  }
  if (size > limits.maxBytes) throw tooLarge(`${path} (${size} bytes)`, limits.maxBytes);
  const stream = createReadStream(path);
  return collect(stream, limits.maxBytes, () => stream.destroy());
}

async function readHttpUrl(url: URL, limits: DownloadLimits): Promise<string> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), limits.timeoutMs);
  try {
    let res: Response;
    try {
      res = await egressFetch(url, { signal: abort.signal, headers: { accept: "application/json" } });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
      // A destination network.egress refuses stays refused until the config changes: trying again cannot help.
      throw new PricingDownloadError(`cannot reach ${url.origin}: ${abort.signal.aborted ? `no answer within ${limits.timeoutMs} ms` : cause}`, egressDenial(err) === undefined, err);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new PricingDownloadError(`${url.origin}${url.pathname} answered HTTP ${res.status}`, res.status >= 500 || res.status === 429);
    }
    const declared = Number(res.headers.get("content-length") ?? "");
    if (Number.isFinite(declared) && declared > limits.maxBytes) {
      await res.body?.cancel();
      throw tooLarge(`the answer of ${url.origin}${url.pathname} (${declared} bytes)`, limits.maxBytes);
    }
    if (res.body === null) return "";
    try {
      return await collect(res.body, limits.maxBytes, () => abort.abort());
    } catch (err) {
      if (err instanceof PricingDownloadError) throw err;
      throw new PricingDownloadError(`the download from ${url.origin} broke off: ${abort.signal.aborted ? `no end within ${limits.timeoutMs} ms` : err instanceof Error ? err.message : String(err)}`, true, err);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Reads the datasheet's text; throws PricingDownloadError. */
export async function downloadPricingFile(text: string, limits: DownloadLimits): Promise<string> {
  const url = new URL(text);
  if (url.protocol === "file:") return readFileUrl(url, limits);
  if (url.protocol === "http:" || url.protocol === "https:") return readHttpUrl(url, limits);
  throw new PricingDownloadError(`pricing_url must be http://, https:// or file://, got ${url.protocol}`, false);
}
