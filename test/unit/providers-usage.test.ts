/** Token counts read from upstream answers: what counts, and what is not a count. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { chatUsage, count, MAX_TOKEN_COUNT } from "../../src/providers/usage.js";
import { StreamUsage } from "../../src/providers/anthropic/response-translation.js";

test("counts whole and fractional numbers up to the largest count", () => {
  assert.equal(count(0), 0);
  assert.equal(count(12.5), 12.5);
  assert.equal(count(MAX_TOKEN_COUNT), MAX_TOKEN_COUNT);
});

test("counts a report above the largest count, infinite or not a number as none", () => {
  for (const value of [MAX_TOKEN_COUNT + 1, 1e308, Infinity, NaN, -1, "7", null]) assert.equal(count(value), 0, String(value));
});

test("keeps two huge reports from adding up to an infinite usage", () => {
  const usage = chatUsage({ prompt_tokens: 1e308, completion_tokens: 1e308 });
  assert.deepEqual(usage, { input_tokens: 0, output_tokens: 0 });
});

test("reads an Anthropic stream's output count through the same bound", () => {
  const tally = new StreamUsage();
  tally.observe({ type: "message_delta", usage: { output_tokens: 1e308 } });
  assert.deepEqual(tally.usage(), { input_tokens: 0, output_tokens: 0 });
});
