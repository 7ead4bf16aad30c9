import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { GatewayError } from "../../src/errors.js";
import { messageFromJson } from "../../src/proto-json/message-from-json.js";
import { messageToRestJson } from "../../src/proto-json/message-to-json.js";
import { updateMaskPaths } from "../../src/proto-json/update-mask.js";
import { thingService } from "./rest-test-protos.js";

const service = thingService();
const Thing = service.methods.find((m) => m.name === "GetThing")!.output; // ! : the fixture always has GetThing

/** Reads JSON as the `thing` body field, as the bridge does for PATCH /things/{id}. */
function read(json: unknown): Record<string, unknown> {
  return messageFromJson(Thing, json, "thing", {}).message as unknown as Record<string, unknown>;
}

function rejects(json: unknown, message: RegExp): void {
  assert.throws(
    () => messageFromJson(Thing, json, "thing", {}),
    (err: unknown) => err instanceof GatewayError && err.httpStatus === 400 && err.type === "invalid_request" && message.test(err.message),
  );
}

function write(desc: DescMessage, init: Record<string, unknown>): Record<string, unknown> {
  return messageToRestJson(desc, create(desc, init) as Message) as Record<string, unknown>;
}

describe("reading REST JSON", () => {
  test("reads an enum by its lowercase suffix", () => {
    assert.equal((read({ inner: { color: "dark_blue" } })["inner"] as { color: number }).color, 2);
  });

  test("reads enums inside a repeated field", () => {
    assert.deepEqual(read({ colors: ["red", "dark_blue"] })["colors"], [1, 2]);
  });

  test("reads enums inside map values", () => {
    assert.deepEqual(read({ color_by_name: { sky: "dark_blue" } })["colorByName"], { sky: 2 });
  });

  test("reads enums inside messages held in a map", () => {
    const inners = read({ inners: { a: { color: "red" } } })["inners"] as Record<string, { color: number }>;
    assert.equal(inners["a"]?.color, 1);
  });

  test("rejects the unspecified enum value, listing the allowed ones", () => {
    rejects({ inner: { color: "unspecified" } }, /^thing\.inner\.color: expected one of "red", "dark_blue", got "unspecified"$/);
  });

  test("rejects the full proto enum name", () => {
    rejects({ colors: ["COLOR_RED"] }, /^thing\.colors\[0\]: expected one of "red", "dark_blue"/);
  });

  test("rejects an enum given as a number", () => {
    rejects({ colors: [1] }, /thing\.colors\[0\]: expected one of/);
  });

  test("reads int64 from a number", () => {
    assert.equal(read({ big: 42 })["big"], 42n);
  });

  test("reads int64 from a decimal string", () => {
    assert.equal(read({ big: "9223372036854775807" })["big"], 9223372036854775807n);
  });

  test("rejects an int64 number that is not exactly representable", () => {
    rejects({ big: 2 ** 60 }, /thing\.big: .* send it as a decimal string/);
  });

  test("rejects an int64 string beyond the int64 range", () => {
    rejects({ big: "9223372036854775808" }, /thing\.big: 9223372036854775808 is out of range for int64/);
  });

  test("rejects a negative uint64", () => {
    rejects({ ubig: -1 }, /thing\.ubig: -1 is out of range for uint64/);
  });

  test("rejects an int32 beyond its range", () => {
    rejects({ small: 2147483648 }, /^thing\.small: 2147483648 is out of range for int32/);
  });

  test("rejects a fractional int32", () => {
    rejects({ small: 1.5 }, /thing\.small: expected an integer \(int32\), got 1\.5/);
  });

  test("rejects a negative uint32", () => {
    rejects({ u: -1 }, /thing\.u: -1 is out of range for uint32/);
  });

  test("rejects a float beyond the float range", () => {
    rejects({ f: 1e39 }, /thing\.f: .* out of range for float/);
  });

  test("rejects a string where a boolean belongs", () => {
    rejects({ flag: "true" }, /^thing\.flag: expected a boolean, got "true"$/);
  });

  test("rejects a number where a string belongs, naming the nested path", () => {
    rejects({ inner: { note: 5 } }, /^thing\.inner\.note: expected a string, got 5$/);
  });

  test("rejects an unknown field at the top of the body", () => {
    rejects({ nope: 1 }, /^unknown field "thing\.nope"$/);
  });

  test("rejects an unknown field inside a nested message", () => {
    rejects({ inner: { nope: 1 } }, /^unknown field "thing\.inner\.nope"$/);
  });

  test("rejects an unknown field inside a message in a list", () => {
    rejects({ inner_list: [{}, { nope: 1 }] }, /^unknown field "thing\.inner_list\[1\]\.nope"$/);
  });

  test("rejects an unknown field inside a message in a map", () => {
    rejects({ inners: { k: { nope: 1 } } }, /^unknown field "thing\.inners\["k"\]\.nope"$/);
  });

  test("rejects a camelCase field name, pointing at the snake_case one", () => {
    rejects({ colorByName: {} }, /unknown field "thing\.colorByName"; field names are snake_case: "color_by_name"/);
  });

  test("rejects an object where a list belongs", () => {
    rejects({ colors: {} }, /^thing\.colors: expected an array, got an object$/);
  });

  test("rejects a list where a message belongs", () => {
    rejects({ inner: [] }, /^thing\.inner: expected a JSON object, got an array$/);
  });

  test("rejects a map key that is not an integer for an int32-keyed map", () => {
    rejects({ by_number: { x: "y" } }, /thing\.by_number\["x"\] \(key\): expected an integer/);
  });

  test("reads an int32-keyed map", () => {
    assert.deepEqual(read({ by_number: { "7": "seven" } })["byNumber"], { 7: "seven" });
  });

  test("rejects a null map value", () => {
    rejects({ color_by_name: { a: null } }, /thing\.color_by_name\["a"\]: a map value cannot be null/);
  });

  test("treats null as an omitted field", () => {
    assert.equal(read({ inner: null, small: null })["inner"], undefined);
  });

  test("keeps null as a value for google.protobuf.Value", () => {
    const anything = read({ anything: null })["anything"] as { kind: { case: string } };
    assert.equal(anything.kind.case, "nullValue");
  });

  test("rejects two members of one oneof", () => {
    rejects({ a: "x", b: "y" }, /thing\.b: only one of "a" and "b" may be set \(oneof choice\)/);
  });

  test("reads a Timestamp from its RFC 3339 string", () => {
    const at = read({ at: "2024-05-01T10:00:00Z" })["at"] as { seconds: bigint };
    assert.equal(at.seconds, BigInt(Date.UTC(2024, 4, 1, 10) / 1000));
  });

  test("rejects a malformed Timestamp, naming the field", () => {
    rejects({ at: "yesterday" }, /^thing\.at: /);
  });

  test("reads a Struct from any JSON object", () => {
    const meta = read({ meta: { nested: { list: [1, "two", null] } } })["meta"];
    assert.deepEqual(meta, { nested: { list: [1, "two", null] } });
  });

  test("reads a Duration and a wrapper in their standard JSON", () => {
    const thing = read({ took: "1.5s", wrapped: 7 });
    assert.equal((thing["took"] as { seconds: bigint }).seconds, 1n);
    assert.equal(thing["wrapped"], 7);
  });

  test("reads bytes from base64", () => {
    assert.deepEqual(read({ blob: "aGk=" })["blob"], new Uint8Array([104, 105]));
  });

  test("rejects text with an unpaired surrogate", () => {
    rejects({ inner: { note: "\ud800" } }, /thing\.inner\.note: text contains an unpaired UTF-16 surrogate/);
  });

  test("rejects text with a NUL character", () => {
    rejects({ inner: { note: "a\u0000b" } }, /thing\.inner\.note: text contains a NUL character \(U\+0000\)/);
  });

  test("rejects very deeply nested Value input with a 400", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    rejects({ anything: deep }, /^thing\.anything: /);
  });
});

describe("writing REST JSON", () => {
  test("writes enums as their lowercase suffix in lists, maps and nested messages", () => {
    const json = write(Thing, { colors: [1, 2], colorByName: { sky: 2 }, inner: { color: 1 }, inners: { a: { color: 2 } } });
    assert.deepEqual(json["colors"], ["red", "dark_blue"]);
    assert.deepEqual(json["color_by_name"], { sky: "dark_blue" });
    assert.equal((json["inner"] as Record<string, unknown>)["color"], "red");
    assert.equal((json["inners"] as Record<string, Record<string, unknown>>)["a"]?.["color"], "dark_blue");
  });

  test("writes an undeclared enum number as the number", () => {
    assert.deepEqual(write(Thing, { colors: [9] })["colors"], [9]);
  });

  test("writes int64 as a JSON number when it is a safe integer", () => {
    assert.equal(write(Thing, { big: 42n })["big"], 42);
  });

  test("writes int64 beyond 2^53 as a decimal string", () => {
    assert.equal(write(Thing, { big: 2n ** 60n })["big"], "1152921504606846976");
  });

  test("writes repeated int64 as numbers", () => {
    assert.deepEqual(write(Thing, { bigs: [1n, 2n] })["bigs"], [1, 2]);
  });

  test("writes implicit defaults with proto field names", () => {
    const json = write(Thing, {});
    assert.equal(json["small"], 0);
    assert.equal(json["big"], 0);
    assert.equal(json["flag"], false);
    assert.deepEqual(json["color_by_name"], {});
    assert.deepEqual(json["inner_list"], []);
    assert.equal("inner" in json, false, "unset message fields stay absent");
  });

  test("writes a Timestamp as an RFC 3339 string", () => {
    const at = timestampFromDate(new Date(Date.UTC(2024, 4, 1, 10)));
    assert.equal(write(Thing, { at })["at"], "2024-05-01T10:00:00Z");
  });
});

describe("update_mask derivation", () => {
  test("names a nested message as a whole on a replacing update (PUT)", () => {
    assert.deepEqual(updateMaskPaths(Thing, { inner: { note: "x", color: "red" } }, "replace"), ["inner"]);
  });

  test("names nested plain-message keys by their full path on a merging update (PATCH)", () => {
    assert.deepEqual(updateMaskPaths(Thing, { inner: { note: "x", color: "red" } }, "merge"), ["inner.note", "inner.color"]);
  });

  test("treats lists, maps and well-known types as leaves", () => {
    assert.deepEqual(updateMaskPaths(Thing, { colors: [], color_by_name: { a: "red" }, meta: { k: 1 }, at: "2024-05-01T10:00:00Z" }, "merge"), [
      "colors",
      "color_by_name",
      "meta",
      "at",
    ]);
  });

  test("counts an empty list as present", () => {
    assert.deepEqual(updateMaskPaths(Thing, { inner_list: [] }, "replace"), ["inner_list"]);
  });

  test("names a nested message set to null as a whole", () => {
    assert.deepEqual(updateMaskPaths(Thing, { inner: null }, "merge"), ["inner"]);
  });
});
