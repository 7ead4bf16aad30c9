/**
 * Reads a REST request body into a JSON object: bounded by the size limit (a 413 stops reading, it
 * never buffers the rest), JSON content types only, strict UTF-8, and an object at the top.
 */
import { isUtf8 } from "node:buffer";
import type * as http from "node:http";
import type * as http2 from "node:http2";
import { GatewayError } from "../../errors.js";
import { isJsonObject } from "./message-from-json.js";
import { invalidRequest, payloadTooLarge, unsupportedMediaType } from "./rest-error.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;

/** Thrown when the client goes away mid-body; there is nobody left to answer. */
export class ClientClosedError extends GatewayError {
  constructor() {
    super("unavailable", "the client closed the request before sending its whole body", {
      type: "client_closed_request",
    });
  }
}

/** The body as a JSON object; an empty body is `{}`. */
export async function readJsonBody(req: Req, maxBytes: number): Promise<Record<string, unknown>> {
  const bytes = await readBytes(req, maxBytes, true);
  if (bytes.length === 0) return {};
  checkContentType(req);

  // isUtf8 is a native check; TextDecoder's fatal mode costs a decoder per request.
  if (!isUtf8(bytes)) throw invalidRequest("request body is not valid UTF-8");
  const decoded = bytes.toString("utf8");
  // A leading byte-order mark is dropped, as TextDecoder does.
  const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // Whitespace alone counts as an empty body; checked only here so a valid body is never copied by trim().
    if (text.trim() === "") return {};
    throw invalidRequest(`request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isJsonObject(json)) throw invalidRequest(`request body must be a JSON object, got ${describe(json)}`);
  return json;
}

function describe(json: unknown): string {
  if (json === null) return "null";
  return Array.isArray(json) ? "an array" : `a ${typeof json}`;
}

function checkContentType(req: Req): void {
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw unsupportedMediaType(`content-encoding "${encoding}" is not supported`);
  }
  const contentType = req.headers["content-type"];
  if (contentType === undefined) return;
  const [media = "", ...params] = contentType.split(";").map((p) => p.trim().toLowerCase());
  if (media !== "application/json" && !media.endsWith("+json")) {
    throw unsupportedMediaType(`content-type "${contentType}" is not supported`);
  }
  const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw unsupportedMediaType(`charset "${charset}" is not supported; JSON bodies must be UTF-8`);
  }
}

function ignore(): void {}

/**
 * Reads and drops the body of a route that takes none, still within the limit: clients often send
 * `{}` anyway, and an unread body would hold an HTTP/2 stream open.
 */
export async function discardBody(req: Req, maxBytes: number): Promise<void> {
  await readBytes(req, maxBytes, false);
}

function readBytes(req: Req, maxBytes: number, keep: boolean): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "");
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(payloadTooLarge(maxBytes));
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("close", onGone);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > maxBytes) {
        done();
        // Pausing (not draining) leaves the rest unread; the caller closes the connection or stream.
        req.pause();
        reject(payloadTooLarge(maxBytes));
        return;
      }
      if (keep) chunks.push(buf);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    const onGone = (): void => {
      done();
      reject(new ClientClosedError());
    };
    // Errors after a 413 or a settled read (e.g. the client resetting) have nobody to report to.
    req.on("error", ignore);
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onGone);
    req.once("close", onGone);
  });
}
