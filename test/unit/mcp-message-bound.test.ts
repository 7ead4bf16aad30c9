import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { answeredIdOf, boundedAnswerFetch, EventBytes, OversizedMessageError, oversizedAnswer } from "../../src/mcp/message-bound.js";

const chunk = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("EventBytes", () => {
  test("answers where the last finished event of a chunk ends", () => {
    const counter = new EventBytes(100);
    assert.equal(counter.add(chunk("data: a\n\ndata: b\n\ndata: c")), 18);
    assert.equal(counter.add(chunk("cc")), -1);
  });

  test("finds an event's end split across two chunks, with any line ends", () => {
    for (const [first, second] of [["data: a\n", "\n"], ["data: a\r", "\r"], ["data: a\r\n", "\r\n"], ["data: a\n", "\r\n"]] as const) {
      const counter = new EventBytes(100);
      assert.equal(counter.add(chunk(first)), -1, JSON.stringify(first));
      assert.ok(counter.add(chunk(second)) >= 1, JSON.stringify([first, second]));
    }
  });

  test("throws once the event in progress passes the bound", () => {
    const counter = new EventBytes(10);
    counter.add(chunk("data: 1234"));
    assert.throws(() => counter.add(chunk("5")), OversizedMessageError);
  });

  test("throws for an event over the bound that ends in the chunk that passes it", () => {
    const counter = new EventBytes(10);
    counter.add(chunk("data: 12"));
    assert.throws(() => counter.add(chunk("345678\n\n")), OversizedMessageError);
  });

  test("throws for an event over the bound wholly inside one long chunk", () => {
    const counter = new EventBytes(10);
    assert.throws(() => counter.add(chunk("data: 1\n\ndata: 123456789\n\ndata: 2\n\n")), OversizedMessageError);
  });

  test("counts each event on its own: many small events pass", () => {
    const counter = new EventBytes(10);
    for (let i = 0; i < 100; i++) counter.add(chunk("data: 1\n\n"));
  });
});

/** A fetch answering `parts` as the body of a response of `type`. */
function answering(type: string, parts: string[], status = 200): typeof fetch {
  return async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(chunk(part));
          controller.close();
        },
      }),
      { status, headers: { "content-type": type } },
    );
}

const GET = { method: "GET" };

describe("boundedAnswerFetch", () => {
  test("passes an answer within the bound as it is", async () => {
    const json = await boundedAnswerFetch(answering("application/json", ['{"a":', "1}"]), 20)("http://x", GET);
    assert.deepEqual(await json.json(), { a: 1 });
  });

  test("fails a body once it passes the bound", async () => {
    const res = await boundedAnswerFetch(answering("application/json", ["[".repeat(15), "]".repeat(15)]), 20)("http://x", GET);
    await assert.rejects(res.text(), OversizedMessageError);
  });
});

describe("oversizedAnswer", () => {
  test("answers a request with an internal error naming its method and the bound", () => {
    const answer = oversizedAnswer({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "big" } }, 20) as { id: number; error: { code: number; message: string } };
    assert.equal(answer.id, 7);
    assert.equal(answer.error.code, -32603);
    assert.match(answer.error.message, /answer to tools\/call is larger than 20 bytes/);
  });

  test("owes nothing to a notification", () => {
    assert.equal(oversizedAnswer({ jsonrpc: "2.0", method: "notifications/initialized" }), undefined);
  });
});

describe("answeredIdOf", () => {
  test("reads the id a message ends with, after its result (the TypeScript SDK's order)", () => {
    assert.equal(answeredIdOf('{"result":{"content":[{"type":"text","text":"aaa', 'aaa"}]},"jsonrpc":"2.0","id":5}'), 5);
  });

  test("reads the id a message starts with, before its result (the Python SDK's order)", () => {
    assert.equal(answeredIdOf('{"jsonrpc":"2.0","id":"req-\\"1","result":{"content":[', "]}}"), 'req-"1');
  });

  test("reads no id from a request or notification of the server's", () => {
    assert.equal(answeredIdOf('{"method":"sampling/createMessage","params":{"messages":[', ']},"jsonrpc":"2.0","id":0}'), undefined);
  });

  test("does not take an id nested in the result for the message's own", () => {
    assert.equal(answeredIdOf('{"result":{"structuredContent":{"rows":[', ']},"id":9}}'), undefined);
  });
});
