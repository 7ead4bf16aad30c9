/**
 * A generated corpus of bad input against every path: each /api operation and /v1, /anthropic and /mcp
 * endpoint of /openapi.json, every Connect procedure and gRPC method of the generated service descriptors,
 * and raw-socket shapes no real client sends (oversized and repeated headers, request smuggling). Every case
 * must get a 4xx JSON error in its path's envelope (never a 5xx, a reset or a hang), the gateway must stay
 * up, and nothing may be created.
 *
 * Seeded with fast-check: GW_FUZZ_SEED replays a run (a failure prints its seed and path), GW_FUZZ_RUNS
 * scales the number of cases (default 1000 in all).
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { after, before, describe, test } from "node:test";
import type { DescService } from "@bufbuild/protobuf";
import fc from "fast-check";
import { startApp, type TestApp } from "../helpers/app.js";
import { generatedServices } from "../helpers/generated-services.js";
import { rawRequest, requestHead, type RawAnswer } from "../helpers/raw-http.js";
import { SKIP_IN_REPEATED_RUN } from "../helpers/repeated-run.js";

const SEED = process.env["GW_FUZZ_SEED"] ? Number(process.env["GW_FUZZ_SEED"]) : Date.now() % 2 ** 31;
/** Cases in all; each surface gets its share below. */
const TOTAL_RUNS = Number(process.env["GW_FUZZ_RUNS"] ?? 1000);

/** Cases tried so far, over every surface. */
let casesRun = 0;

/**
 * Runs `share` of the cases of a surface; a failure names the seed and path that replay it and the first
 * failing case (not shrunk: the first failure already names the path and the shape).
 */
async function check<T>(arb: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>, share: number): Promise<void> {
  const out = await fc.check(fc.asyncProperty(arb, predicate), { seed: SEED, numRuns: Math.max(1, Math.ceil(TOTAL_RUNS * share)), endOnFailure: true });
  casesRun += out.numRuns;
  if (out.failed) {
    const error = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
    assert.fail(`case ${out.numRuns} failed (replay: GW_FUZZ_SEED=${out.seed}, path ${out.counterexamplePath ?? "?"}):\n${error.slice(0, 2000)}`);
  }
}

/** A path short enough for a failure message. */
function shown(path: string): string {
  return path.length > 160 ? `${path.slice(0, 160)}...(${path.length} chars)` : path;
}

type Family = "api" | "v1" | "anthropic" | "mcp" | "connect";

/** An operation of /openapi.json that takes input. */
interface Operation {
  method: string;
  path: string;
  family: Family;
  /** The JSON body's top-level fields; null when the operation takes no body. */
  fields: FieldInfo[] | null;
}

interface FieldInfo {
  name: string;
  /** The JSON Schema type, "" when the schema does not say. */
  type: string;
  enumValues: string[];
}

/** Paths that answer everything by design (liveness, metrics, the document itself, the SSE stream). */
const NOT_INPUT = new Set(["/health", "/ready", "/metrics", "/openapi.json", "/mcp/sse"]);

function familyOf(path: string): Family {
  if (path.startsWith("/anthropic/")) return "anthropic";
  if (path === "/mcp" || path.startsWith("/mcp/")) return "mcp";
  if (path.startsWith("/v1/") && path !== "/v1/mcp/tool/execute") return "v1";
  return "api";
}

type JsonSchema = { $ref?: string; type?: string | string[]; enum?: unknown[]; properties?: Record<string, JsonSchema>; allOf?: JsonSchema[]; oneOf?: JsonSchema[]; anyOf?: JsonSchema[] };

/** The operations of the document, each with the top-level fields of its JSON body. */
function operationsOf(doc: { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>>; components?: { schemas?: Record<string, JsonSchema> } }): Operation[] {
  const schemas = doc.components?.schemas ?? {};
  const resolve = (s: JsonSchema | undefined, depth = 0): JsonSchema | undefined => {
    if (s?.$ref === undefined || depth > 10) return s;
    return resolve(schemas[s.$ref.split("/").pop() ?? ""], depth + 1);
  };
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (NOT_INPUT.has(path)) continue;
    for (const [method, op] of Object.entries(ops)) {
      const schema = resolve(op.requestBody?.content?.["application/json"]?.schema);
      let fields: FieldInfo[] | null = null;
      if (op.requestBody) {
        const props: Record<string, JsonSchema> = {};
        for (const part of [schema, ...(schema?.allOf ?? []), ...(schema?.oneOf ?? []), ...(schema?.anyOf ?? [])]) Object.assign(props, resolve(part)?.properties ?? {});
        fields = Object.entries(props).map(([name, raw]) => {
          const s = resolve(raw) ?? {};
          const type = Array.isArray(s.type) ? (s.type.find((t) => t !== "null") ?? "") : (s.type ?? "");
          return { name, type, enumValues: (s.enum ?? []).filter((v): v is string => typeof v === "string") };
        });
      }
      out.push({ method: method.toUpperCase(), path, family: familyOf(path), fields });
    }
  }
  return out;
}

// ---- generators -------------------------------------------------------------------------------------

/** Path segments a caller should never be able to use to reach anything: traversal, encodings, oddities. */
const oddId = fc.oneof(
  fc.constantFrom(
    "..",
    "../..",
    "..%2f..%2f..%2fetc%2fpasswd",
    "%2e%2e%2f%2e%2e%2f",
    "%2e%2e",
    "%00",
    "a%00b",
    "%ZZ",
    "%",
    "%C0%AE%C0%AE",
    "%FF%FE",
    "%F0%9F%98%80",
    "con",
    "<script>alert(1)<%2fscript>",
    "'%20OR%201=1%20--",
    "a".repeat(5000),
    "%E2%80%AE",
    "\\..\\..\\windows",
    "~root",
    "${jndi:ldap:x}",
  ),
  fc.string({ minLength: 1, maxLength: 40 }).map((s) => encodeURIComponent(s)),
);

/** A JSON value of a type other than `type` (and never null, which counts as absent). */
function wrongTypeFor(type: string): fc.Arbitrary<unknown> {
  const all: Record<string, fc.Arbitrary<unknown>> = {
    string: fc.string({ maxLength: 20 }),
    number: fc.double({ noNaN: true, noDefaultInfinity: true }),
    boolean: fc.boolean(),
    object: fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
    array: fc.array(fc.integer(), { maxLength: 3 }),
  };
  // Integers are numbers; a string where a number or a 64-bit integer goes is not refused by proto JSON.
  const same = type === "integer" ? ["number", "string"] : type === "number" ? ["number", "string"] : [type];
  return fc.oneof(...Object.entries(all).filter(([t]) => !same.includes(t)).map(([, a]) => a));
}

/** One thing wrong with a body, as raw bytes; each shape is refused whatever the operation. */
type BodyCase = { label: string; body: Buffer; contentType?: string };

/**
 * `nulInText` adds a NUL character (U+0000) in a text field, which every `/api` operation refuses (the database
 * cannot hold one) while `/v1` passes message text through as it came.
 */
function bodyCase(fields: FieldInfo[], nulInText = false): fc.Arbitrary<BodyCase> {
  const known = fields.length > 0 ? fc.constantFrom(...fields) : fc.constant<FieldInfo>({ name: "fuzz", type: "", enumValues: [] });
  const typed = fields.filter((f) => f.type !== "");
  const enums = fields.filter((f) => f.enumValues.length > 0);
  const numeric = fields.filter((f) => f.type === "integer" || f.type === "number");
  const unknownName = fc.stringMatching(/^[a-z][a-z0-9_]{2,20}$/).map((n) => `zz_${n}`);
  const text = (label: string, s: string, contentType?: string): BodyCase => ({ label, body: Buffer.from(s, "utf8"), ...(contentType ? { contentType } : {}) });
  const arbs: fc.Arbitrary<BodyCase>[] = [
    // Truncated JSON: a prefix of a real object that does not parse.
    fc.tuple(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 4 }), fc.nat()).map(([obj, cut]) => {
      const full = JSON.stringify(obj);
      return text("truncated JSON", full.slice(0, cut % (full.length - 1) + 1).replace(/\}$/, ""));
    }),
    fc.constantFrom("{", "{\"a\":", "{'a': 1}", "{a: 1}", "{\"a\": 1,}", "[", "nul", "{\"a\" 1}", "\"\\u12\"", "{\"a\": 01}", "{\"a\": .5}", "{\"a\": +1}", "{} {}").map((s) => text("malformed JSON", s)),
    // An empty or blank body is `{}` by design, which an operation whose fields are all optional accepts.
    fc.string({ minLength: 1, maxLength: 50 }).filter((s) => s.trim() !== "" && !isJsonObject(s)).map((s) => text("random text", s)),
    fc.constantFrom("[]", "1", "\"x\"", "true", "null", "[{}]").map((s) => text("JSON that is not an object", s)),
    fc.constantFrom(1000, 100_000).map((depth) => text(`nesting ${depth} deep`, `{"a":${"[".repeat(depth)}${"]".repeat(depth)}}`)),
    fc.constantFrom(1000, 100_000).map((depth) => text(`object nesting ${depth} deep`, `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`)),
    fc.tuple(unknownName, fc.integer({ min: 100_000, max: 1_000_000 })).map(([name, n]) => text("huge string in an unknown field", JSON.stringify({ [name]: "x".repeat(n) }))),
    fc.tuple(unknownName, fc.integer({ min: 10_000, max: 200_000 })).map(([name, n]) => text("huge array in an unknown field", JSON.stringify({ [name]: new Array<number>(n).fill(7) }))),
    fc.tuple(unknownName, fc.jsonValue({ maxDepth: 2 })).map(([name, v]) => text("unknown field", JSON.stringify({ [name]: v ?? 1 }))),
    fc.tuple(known, fc.constantFrom("NaN", "Infinity", "-Infinity", "undefined", "0x10", "1e400", "-1e400")).map(([f, lit]) =>
      // 1e400 is valid JSON (it parses to Infinity); where the field is not numeric it is a wrong type anyway.
      text(`${lit} in ${f.name}`, `{"${f.name}": ${lit}}`),
    ),
    fc.tuple(known, fc.stringMatching(/^[a-z ]{0,10}$/)).map(([f, s]) => ({
      label: `invalid UTF-8 in ${f.name}`,
      body: Buffer.concat([Buffer.from(`{"${f.name}": "${s}`), Buffer.from([0xff, 0xfe, 0xc0, 0xaf]), Buffer.from('"}')]),
    })),
    fc.tuple(unknownName).map(([name]) => ({ label: "BOM then an unknown field", body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ [name]: 1 }))]) })),
    fc.tuple(unknownName, fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "application/jsonx", "image/png", "*/*", ";;;", "application/json; charset=latin1x"))
      .map(([name, ct]) => text(`content type ${ct}`, JSON.stringify({ [name]: 1 }), ct)),
  ];
  if (typed.length > 0) {
    arbs.push(fc.constantFrom(...typed).chain((f) => wrongTypeFor(f.type).map((v) => text(`wrong type in ${f.name} (${f.type})`, JSON.stringify({ [f.name]: v })))));
    // Duplicate keys, both wrong: whichever a parser keeps, the body is refused.
    arbs.push(fc.constantFrom(...typed).chain((f) => fc.tuple(wrongTypeFor(f.type), wrongTypeFor(f.type)).map(([a, b]) => text(`duplicate ${f.name}`, `{"${f.name}": ${JSON.stringify(a)}, "${f.name}": ${JSON.stringify(b)}}`))));
  }
  const texts = fields.filter((f) => f.type === "string");
  if (nulInText && texts.length > 0) {
    arbs.push(fc.tuple(fc.constantFrom(...texts), fc.stringMatching(/^[a-z]{0,6}$/)).map(([f, s]) => text(`a NUL character in ${f.name}`, JSON.stringify({ [f.name]: `${s}\u0000${s}` }))));
  }
  if (enums.length > 0) {
    arbs.push(fc.tuple(fc.constantFrom(...enums), fc.string({ minLength: 1, maxLength: 12 })).filter(([f, v]) => !f.enumValues.includes(v)).map(([f, v]) => text(`bad enum in ${f.name}`, JSON.stringify({ [f.name]: v }))));
  }
  if (numeric.length > 0) {
    arbs.push(fc.tuple(fc.constantFrom(...numeric), fc.constantFrom("1e400", "-1e400", "1e308", "9007199254740993999", "-0.5e999")).map(([f, n]) => text(`out-of-range number in ${f.name}`, `{"${f.name}": ${n}, "zz_unknown": 1}`)));
  }
  return fc.oneof(...arbs);
}

function isJsonObject(s: string): boolean {
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** A query string that is refused: unknown parameters, bad values of paging ones, broken encodings. */
const badQuery = fc.oneof(
  fc.stringMatching(/^[a-z]{3,12}$/).map((n) => `zz_${n}=1`),
  fc.constantFrom("limit=ten", "limit=-1", "limit=1e400", "limit=NaN", "offset=%ZZ", "limit=99999999999999999999", "limit=1&limit=2&zz=1", "%=%", "zz[]=1&zz[]=2", "zz=%00"),
);

/**
 * Bad values of the Anthropic listing's own parameters. Unknown parameters are ignored there, as
 * Anthropic's API does: its SDKs add some (`beta=true`) that a refusal would break.
 */
const badAnthropicQuery = fc.constantFrom("limit=ten", "limit=-1", "limit=0", "limit=1001", "limit=1e400", "limit=NaN", "limit=99999999999999999999", "after_id=nope", "before_id=nope", "after_id=a&before_id=b", "limit=%ZZ");

// ---- checks -----------------------------------------------------------------------------------------

/** Why an answer is not a 4xx JSON error in the envelope of `family`; null when it is. */
function envelopeProblem(family: Family | "parser", answer: RawAnswer): string | null {
  if (answer.socketError !== undefined && answer.status === 0) return `no answer (${answer.socketError})`;
  if (answer.status < 400 || answer.status > 499) return `status ${answer.status}: ${answer.body.toString("utf8").slice(0, 300)}`;
  if (!(answer.headers["content-type"] ?? "").startsWith("application/json")) return `content type ${answer.headers["content-type"]} (status ${answer.status})`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.body.toString("utf8")) as Record<string, unknown>;
  } catch {
    return `a body that is not JSON: ${answer.body.toString("utf8").slice(0, 200)}`;
  }
  const error = body["error"] as Record<string, unknown> | undefined;
  const typed = typeof error?.["type"] === "string" && typeof error["message"] === "string";
  switch (family) {
    case "api":
    case "parser":
      return typed ? null : `not the /api envelope: ${JSON.stringify(body).slice(0, 300)}`;
    case "v1":
      return typed && "code" in (error ?? {}) && "param" in (error ?? {}) ? null : `not the OpenAI envelope: ${JSON.stringify(body).slice(0, 300)}`;
    case "anthropic":
      return body["type"] === "error" && typed ? null : `not the Anthropic envelope: ${JSON.stringify(body).slice(0, 300)}`;
    case "mcp":
      return body["jsonrpc"] === "2.0" && typeof error?.["code"] === "number" && typeof error["message"] === "string"
        ? null
        : `not a JSON-RPC error: ${JSON.stringify(body).slice(0, 300)}`;
    case "connect":
      return typeof body["code"] === "string" && typeof body["message"] === "string" ? null : `not a Connect error: ${JSON.stringify(body).slice(0, 300)}`;
  }
}

function assertEnvelope(family: Family | "parser", answer: RawAnswer, what: string): void {
  const problem = envelopeProblem(family, answer);
  assert.equal(problem, null, `${what}: ${problem ?? ""}`);
}

/** The path with each {param} replaced by `id`. */
function fill(path: string, id: string): string {
  return path.replace(/\{[^}]+\}/g, id);
}

// ---- the corpus -------------------------------------------------------------------------------------

describe("bad-input corpus", { concurrency: false, skip: SKIP_IN_REPEATED_RUN }, () => {
  let app: TestApp;
  let operations: Operation[];
  let services: DescService[];
  let before_: string;

  /**
   * What the list endpoints show: must be the same after the corpus as before it. Traffic reports (the
   * routing log, route states, usage history) count the refused requests themselves and are left out.
   */
  async function inventory(): Promise<string> {
    const reports = ["routing-log", "/routes", "usage-history"];
    const lists = operations.filter((o) => o.method === "GET" && !o.path.includes("{") && o.family === "api" && !reports.some((r) => o.path.includes(r)));
    const counts: Record<string, unknown> = {};
    for (const op of lists) {
      const res = await fetch(`${app.url}${op.path}`);
      const body = (await res.json()) as Record<string, unknown>;
      counts[op.path] = Object.fromEntries(Object.entries(body).filter(([, v]) => Array.isArray(v)).map(([k, v]) => [k, (v as unknown[]).length]));
    }
    return JSON.stringify(counts);
  }

  async function alive(): Promise<void> {
    const res = await fetch(`${app.url}/health`);
    assert.equal(res.status, 200, "the gateway still answers /health");
  }

  before(async () => {
    app = await startApp();
    const doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as Parameters<typeof operationsOf>[0];
    operations = operationsOf(doc);
    services = await generatedServices();
    before_ = await inventory();
    process.stdout.write(`# bad-input corpus: seed ${SEED} (replay with GW_FUZZ_SEED=${SEED}), ${TOTAL_RUNS} cases\n`);
  });

  after(async () => {
    if (!app) return;
    try {
      await alive();
      assert.equal(await inventory(), before_, "nothing was created or removed");
      process.stdout.write(`# bad-input corpus: ${casesRun} cases tried (seed ${SEED})\n`);
    } finally {
      await app.stop();
    }
  });

  test("the corpus covers every documented surface", () => {
    const families = new Set(operations.map((o) => o.family));
    for (const f of ["api", "v1", "anthropic", "mcp"] as const) assert.ok(families.has(f), `no ${f} operation in /openapi.json`);
    assert.ok(services.length >= 5, "the generated services are found");
  });

  test("bad JSON bodies on every operation that takes one get a 4xx in the path's envelope", async () => {
    const withBody = operations.filter((o) => o.fields !== null);
    const arb = fc.constantFrom(...withBody).chain((op) => fc.tuple(fc.constant(op), bodyCase(op.fields ?? [], op.family === "api"), oddId));
    await check(
      arb, async ([op, c, id]) => {
        const path = fill(op.path, id);
        const headers: [string, string][] = [["host", "127.0.0.1"], ["content-type", c.contentType ?? "application/json"], ["content-length", String(c.body.length)]];
        if (op.family === "mcp") headers.push(["accept", "application/json, text/event-stream"]);
        const answer = await rawRequest(app.port, requestHead(op.method, path, headers), c.body);
        assertEnvelope(op.family, answer, `${op.method} ${shown(path)} with ${c.label}`);
      },
      0.45,
    );
    await alive();
  });

  test("odd ids and bad query strings on every operation get a 4xx in the path's envelope", async () => {
    const queryFor = (op: Operation): fc.Arbitrary<string> => {
      const bad = op.family === "anthropic" ? badAnthropicQuery : badQuery;
      // With parameters, the odd id alone must be refused too: a bad query string could be refused before the id is read.
      return op.path.includes("{") ? fc.oneof(bad, fc.constant("")) : bad;
    };
    const arb = fc.constantFrom(...operations).chain((op) => fc.tuple(fc.constant(op), oddId, queryFor(op)));
    await check(
      arb, async ([op, id, query]) => {
        // A path without parameters gets the bad query string; one with parameters gets the odd id, with or without one.
        const path = query === "" ? fill(op.path, id) : `${fill(op.path, id)}?${query}`;
        const body = op.fields !== null ? Buffer.from(`{"zz_unknown": 1}`) : Buffer.alloc(0);
        const headers: [string, string][] = [["host", "127.0.0.1"]];
        if (body.length > 0) headers.push(["content-type", "application/json"], ["content-length", String(body.length)]);
        if (op.family === "mcp") headers.push(["accept", "application/json, text/event-stream"]);
        const answer = await rawRequest(app.port, requestHead(op.method, path, headers), body);
        assertEnvelope(op.family, answer, `${op.method} ${shown(path)}`);
      },
      0.2,
    );
    await alive();
  });

  test("bad JSON on every Connect procedure gets a 4xx Connect error", async () => {
    const procedures = services.flatMap((s) => s.methods.filter((m) => m.methodKind === "unary").map((m) => ({ path: `/${s.typeName}/${m.name}`, fields: m.input.fields.map((f) => ({ name: f.jsonName, type: f.fieldKind === "scalar" ? (f.scalar === 9 ? "string" : f.scalar === 8 ? "boolean" : "number") : f.fieldKind === "list" ? "array" : "object", enumValues: [] as string[] })) })));
    const arb = fc.constantFrom(...procedures).chain((p) => fc.tuple(fc.constant(p), bodyCase(p.fields)));
    await check(
      arb, async ([p, c]) => {
        const headers: [string, string][] = [["host", "127.0.0.1"], ["content-type", c.contentType ?? "application/json"], ["content-length", String(c.body.length)], ["connect-protocol-version", "1"]];
        const answer = await rawRequest(app.port, requestHead("POST", p.path, headers), c.body);
        // A content type Connect does not speak is refused by the HTTP layer (415) before any Connect code.
        const family = c.contentType !== undefined && answer.status === 415 ? "api" : "connect";
        if (family === "api" && answer.body.length === 0) return;
        assertEnvelope(family, answer, `POST ${p.path} with ${c.label}`);
      },
      0.15,
    );
    await alive();
  });

  test("bad frames on every gRPC method get a client-error status, not a reset", async () => {
    const methods = services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));
    const frames = fc.oneof(
      fc.uint8Array({ minLength: 0, maxLength: 4 }).map((b) => ({ label: "a frame shorter than its prefix", bytes: Buffer.from(b) })),
      fc.integer({ min: 100, max: 2 ** 31 - 1 }).map((n) => ({ label: `a prefix declaring ${n} bytes, then none`, bytes: Buffer.from([0, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]) })),
      fc.uint8Array({ minLength: 1, maxLength: 32 }).map((b) => ({ label: "a compressed frame without grpc-encoding", bytes: Buffer.concat([Buffer.from([1, 0, 0, 0, b.length]), Buffer.from(b)]) })),
      // Wire type 7 and field number 0 do not exist, and a varint or a length-delimited field may not run past the end.
      fc.constantFrom(Buffer.from([0x0f]), Buffer.from([0x08, 0xff, 0xff]), Buffer.from([0x00]), Buffer.from([0x0a, 0x05, 0x01])).map((p) => ({ label: "invalid protobuf", bytes: Buffer.concat([Buffer.from([0, 0, 0, 0, p.length]), p]) })),
    );
    const session = http2.connect(app.url);
    session.on("error", () => {});
    try {
      await check(
        fc.tuple(fc.constantFrom(...methods), frames),
        async ([path, frame]) => {
          const result = await new Promise<{ status: number; grpcStatus: string | undefined; reset?: string }>((resolve) => {
            const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
            let status = 0;
            let grpcStatus: string | undefined;
            stream.on("response", (h) => {
              status = Number(h[":status"]);
              grpcStatus = (h["grpc-status"] as string | undefined) ?? grpcStatus;
            });
            stream.on("trailers", (t) => (grpcStatus = (t["grpc-status"] as string | undefined) ?? grpcStatus));
            stream.on("data", () => {});
            stream.on("error", (err: Error) => resolve({ status, grpcStatus, reset: err.message }));
            stream.on("close", () => resolve({ status, grpcStatus, ...(stream.rstCode && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR ? { reset: `RST_STREAM ${stream.rstCode}` } : {}) }));
            stream.end(frame.bytes);
          });
          assert.equal(result.reset, undefined, `${path} with ${frame.label}: reset`);
          // Server-side codes (unknown 2, deadline 4, internal 13, unavailable 14, data loss 15) and OK are failures,
          // except INTERNAL where the gRPC implementations agree on it: a compressed frame without grpc-encoding
          // (the protocol names INTERNAL) and a message that does not decode (grpc-go and connect-es answer INTERNAL).
          const allowed = (frame.label.startsWith("a compressed frame") || frame.label === "invalid protobuf") && result.grpcStatus === "13";
          assert.ok(result.grpcStatus !== undefined && (allowed || !["0", "2", "4", "13", "14", "15"].includes(result.grpcStatus)), `${path} with ${frame.label} (${frame.bytes.toString("hex")}): grpc-status ${result.grpcStatus} (HTTP ${result.status})`);
        },
        0.1,
      );
    } finally {
      session.close();
    }
    await alive();
  });

  test("oversized, repeated and smuggling-shaped headers get a 4xx JSON error", async () => {
    const withBody = operations.filter((o) => o.fields !== null && o.method === "POST");
    const shapes = fc.oneof(
      fc.integer({ min: 17 * 1024, max: 200 * 1024 }).map((n) => ({ label: `a ${n}-byte header`, headers: [["x-big", "a".repeat(n)]] as [string, string][], body: "{}", parser: true })),
      fc.integer({ min: 600, max: 3000 }).map((n) => ({ label: `${n} repeated headers`, headers: Array.from({ length: n }, (_, i) => ["x-rep", `v${i}-${"b".repeat(20)}`] as [string, string]), body: "{}", parser: true })),
      fc.constant({ label: "Content-Length with Transfer-Encoding", headers: [["content-length", "5"], ["transfer-encoding", "chunked"]] as [string, string][], body: "0\r\n\r\nGET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", parser: true }),
      fc.constant({ label: "two different Content-Lengths", headers: [["content-length", "2"], ["content-length", "40"]] as [string, string][], body: "{}", parser: true }),
      fc.constant({ label: "an obfuscated Transfer-Encoding", headers: [["transfer-encoding", "chunked"], ["transfer-encoding", "x"]] as [string, string][], body: "2\r\n{}\r\n0\r\n\r\n", parser: true }),
      fc.constant({ label: "a bad chunk size", headers: [["transfer-encoding", "chunked"]] as [string, string][], body: "zz\r\n{}\r\n0\r\n\r\n", parser: true }),
      fc.constant({ label: "a negative Content-Length", headers: [["content-length", "-1"]] as [string, string][], body: "{}", parser: true }),
      fc.constant({ label: "a space before the colon", headers: [["content-length ", "2"]] as [string, string][], body: "{}", parser: true }),
    );
    await check(
      fc.tuple(fc.constantFrom(...withBody), shapes), async ([op, shape]) => {
        const headers: [string, string][] = [["host", "127.0.0.1"], ["content-type", "application/json"], ...shape.headers];
        if (!shape.headers.some(([n]) => n.trim() === "content-length" || n === "transfer-encoding")) headers.push(["content-length", String(Buffer.byteLength(shape.body))]);
        const answer = await rawRequest(app.port, requestHead(op.method, op.path, headers), Buffer.from(shape.body, "latin1"));
        assertEnvelope("parser", answer, `${op.method} ${op.path} with ${shape.label}`);
      },
      0.1,
    );
    await alive();
  });
});
