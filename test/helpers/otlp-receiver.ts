/**
 * An OTLP/HTTP trace receiver for tests: POST /v1/traces takes an ExportTraceServiceRequest in protobuf,
 * decoded here from the wire format (the fields of opentelemetry/proto/trace/v1/trace.proto that tests
 * read), and keeps every span with its resource's service name.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** An attribute value as decoded: string, boolean, number (int64 as number), or a list of them. */
export type AttributeValue = string | boolean | number | AttributeValue[] | null;

/** One decoded span. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  events: { name: string; timeNs: bigint; attributes: Record<string, AttributeValue> }[];
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  /** The W3C tracestate the span carries; "" when none. */
  traceState: string;
  droppedAttributes: number;
  /** The W3C trace flags (1: sampled). */
  flags: number;
  serviceName: string;
}

export interface OtlpReceiver {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Requests received, each with its headers. */
  readonly requests: { headers: Record<string, string | string[] | undefined> }[];
  /** Resolves once `predicate` holds for the spans received (polls; bounded by `timeoutMs`). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** A protobuf reader over the wire format: varints, fixed64, length-delimited. */
class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw new Error("truncated varint");
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
    throw new Error("varint too long");
  }

  fixed64(): bigint {
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
    this.pos += 8;
    return view.getBigUint64(0, true);
  }

  bytes(): Uint8Array {
    const len = Number(this.varint());
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  /** Reads every field; `onField` gets the field number, wire type and this reader positioned at the value. */
  fields(onField: (field: number, wire: number) => boolean): void {
    while (!this.done) {
      const tag = Number(this.varint());
      const field = tag >> 3;
      const wire = tag & 7;
      if (!onField(field, wire)) this.skip(wire);
    }
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("utf8");
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

function anyValue(buf: Uint8Array): AttributeValue {
  const r = new Reader(buf);
  let value: AttributeValue = null;
  r.fields((field, wire) => {
    if (field === 1 && wire === 2) value = text(r.bytes());
    else if (field === 2 && wire === 0) value = r.varint() !== 0n;
    else if (field === 3 && wire === 0) value = Number(BigInt.asIntN(64, r.varint()));
    else if (field === 4 && wire === 1) {
      const view = new DataView(r.buf.buffer, r.buf.byteOffset + r.pos, 8);
      r.pos += 8;
      value = view.getFloat64(0, true);
    } else if (field === 5 && wire === 2) {
      const list: AttributeValue[] = [];
      const a = new Reader(r.bytes());
      a.fields((f, w) => {
        if (f !== 1 || w !== 2) return false;
        list.push(anyValue(a.bytes()));
        return true;
      });
      value = list;
    } else return false;
    return true;
  });
  return value;
}

function keyValue(buf: Uint8Array, into: Record<string, AttributeValue>): void {
  const r = new Reader(buf);
  let key = "";
  let value: AttributeValue = null;
  r.fields((field, wire) => {
    if (field === 1 && wire === 2) key = text(r.bytes());
    else if (field === 2 && wire === 2) value = anyValue(r.bytes());
    else return false;
    return true;
  });
  into[key] = value;
}

function span(buf: Uint8Array, serviceName: string): ReceivedSpan {
  const r = new Reader(buf);
  const out: ReceivedSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, startNs: 0n, endNs: 0n, attributes: {}, events: [], statusCode: 0, statusMessage: "", traceState: "", droppedAttributes: 0, flags: 0, serviceName };
  r.fields((field, wire) => {
    if (field === 1 && wire === 2) out.traceId = hex(r.bytes());
    else if (field === 2 && wire === 2) out.spanId = hex(r.bytes());
    else if (field === 3 && wire === 2) out.traceState = text(r.bytes());
    else if (field === 4 && wire === 2) out.parentSpanId = hex(r.bytes());
    else if (field === 10 && wire === 0) out.droppedAttributes = Number(r.varint());
    else if (field === 16 && wire === 5) {
      out.flags = new DataView(r.buf.buffer, r.buf.byteOffset + r.pos, 4).getUint32(0, true);
      r.pos += 4;
    }
    else if (field === 5 && wire === 2) out.name = text(r.bytes());
    else if (field === 6 && wire === 0) out.kind = Number(r.varint());
    else if (field === 7 && wire === 1) out.startNs = r.fixed64();
    else if (field === 8 && wire === 1) out.endNs = r.fixed64();
    else if (field === 9 && wire === 2) keyValue(r.bytes(), out.attributes);
    else if (field === 11 && wire === 2) {
      const e = new Reader(r.bytes());
      const event = { name: "", timeNs: 0n, attributes: {} as Record<string, AttributeValue> };
      e.fields((f, w) => {
        if (f === 1 && w === 1) event.timeNs = e.fixed64();
        else if (f === 2 && w === 2) event.name = text(e.bytes());
        else if (f === 3 && w === 2) keyValue(e.bytes(), event.attributes);
        else return false;
        return true;
      });
      out.events.push(event);
    } else if (field === 15 && wire === 2) {
      const s = new Reader(r.bytes());
      s.fields((f, w) => {
        if (f === 3 && w === 0) out.statusCode = Number(s.varint());
        else if (f === 2 && w === 2) out.statusMessage = text(s.bytes());
        else return false;
        return true;
      });
    } else return false;
    return true;
  });
  return out;
}

/** Decodes an ExportTraceServiceRequest into its spans. */
export function decodeExport(buf: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const top = new Reader(buf);
  top.fields((field, wire) => {
    if (field !== 1 || wire !== 2) return false;
    const rs = new Reader(top.bytes());
    const resource: Record<string, AttributeValue> = {};
    const scopeSpans: Uint8Array[] = [];
    rs.fields((f, w) => {
      if (f === 1 && w === 2) {
        const res = new Reader(rs.bytes());
        res.fields((rf, rw) => {
          if (rf !== 1 || rw !== 2) return false;
          keyValue(res.bytes(), resource);
          return true;
        });
      } else if (f === 2 && w === 2) scopeSpans.push(rs.bytes());
      else return false;
      return true;
    });
    const serviceName = String(resource["service.name"] ?? "");
    for (const ss of scopeSpans) {
      const s = new Reader(ss);
      s.fields((f, w) => {
        if (f !== 2 || w !== 2) return false;
        spans.push(span(s.bytes(), serviceName));
        return true;
      });
    }
    return true;
  });
  return spans;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: { headers: Record<string, string | string[] | undefined> }[] = [];
  const server: Server = createServer((req, res) => {
    bodyOf(req).then(
      (body) => {
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        requests.push({ headers: req.headers });
        spans.push(...decodeExport(body));
        // An empty ExportTraceServiceResponse: full success.
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`the receiver did not get the expected spans; got: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
