/** Refusing text the database cannot hold (U+0000) before a statement is sent, and knowing the refusal again. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DriverException } from "@mikro-orm/core";
import { isUnstorableText, UnstorableTextError } from "../../src/store/index.js";
import { refuseUnstorableText } from "../../src/store/unstorable-text.js";

const SQL = "select * from team where id = ?";

test("passes a statement whose values hold no NUL unchanged", () => {
  assert.equal(refuseUnstorableText(SQL, ["team-1", 3, null, new Date(0), Buffer.from([0, 1]), ["a", "b"], { k: "v" }]), SQL);
});

test("refuses a NUL in a text value", () => {
  assert.throws(() => refuseUnstorableText(SQL, ["team\u0000x"]), UnstorableTextError);
});

test("refuses a NUL inside a list or an object's key or value", () => {
  assert.throws(() => refuseUnstorableText(SQL, [["a", ["b\u0000"]]]), UnstorableTextError);
  assert.throws(() => refuseUnstorableText(SQL, [{ ["k\u0000"]: "v" }]), UnstorableTextError);
  assert.throws(() => refuseUnstorableText(SQL, [{ k: { deeper: "v\u0000" } }]), UnstorableTextError);
});

test("refuses a NUL written into the statement itself", () => {
  assert.throws(() => refuseUnstorableText("select '\u0000'", []), UnstorableTextError);
});

test("the refusal is a 400 invalid_argument", () => {
  const err = new UnstorableTextError();
  assert.equal(err.code, "invalid_argument");
  assert.equal(err.httpStatus, 400);
});

test("the refusal is known again after the ORM wraps it in its own exception", () => {
  assert.equal(isUnstorableText(new DriverException(new UnstorableTextError())), true);
});

test("the server's own refusals of such text are known by their SQLSTATE", () => {
  assert.equal(isUnstorableText(Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" })), true);
  assert.equal(isUnstorableText(Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: "22021" })), true);
});

test("other failures are not unstorable text", () => {
  assert.equal(isUnstorableText(Object.assign(new Error("duplicate key"), { code: "23505" })), false);
  assert.equal(isUnstorableText(new Error("something else")), false);
  assert.equal(isUnstorableText(undefined), false);
});
