/** Shared pieces of the /v1 tests: config-file provider keys, the official SDK pointed at the app, and its refusals. */
import assert from "node:assert/strict";
import OpenAI from "openai";

/** A config-file provider key (the API's JSON of a key); `extra` adds or overrides fields. */
export function fileKey(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, name: id, value: `sk-${id}`, ...extra };
}

/** The official SDK against the app's /v1; a null key sends no credential at all (routing without governance). */
export function sdk(app: { url: string }, apiKey: string | null): OpenAI {
  return new OpenAI({ apiKey: apiKey ?? "unused", baseURL: `${app.url}/v1`, maxRetries: 0, ...(apiKey === null ? { defaultHeaders: { authorization: null } } : {}) });
}

/** The error of class `type` a request must fail with; fails the test when it succeeds. */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof type) return err;
    throw err;
  }
  assert.fail("the request succeeded but should have been refused");
}

/** The API error a request must fail with; fails the test when it succeeds. */
export function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  return rejection(promise, OpenAI.APIError);
}

/** The `error.type` of the /v1 envelope of an API error. */
export function errorType(err: InstanceType<typeof OpenAI.APIError>): unknown {
  return (err.error as { type?: unknown } | undefined)?.type;
}

/** What a chat stream added up to: its text, its first tool call, its last finish reason and its usage chunk. */
export interface ChatStreamSummary {
  text: string;
  toolName: string;
  toolArgs: string;
  finish: string | null;
  usage: OpenAI.CompletionUsage | null;
}

/** Reads a chat stream of the SDK to its end. */
export async function readChatStream(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<ChatStreamSummary> {
  const out: ChatStreamSummary = { text: "", toolName: "", toolArgs: "", finish: null, usage: null };
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    out.text += choice?.delta.content ?? "";
    const call = choice?.delta.tool_calls?.[0];
    out.toolName += call?.function?.name ?? "";
    out.toolArgs += call?.function?.arguments ?? "";
    out.finish = choice?.finish_reason ?? out.finish;
    if (chunk.usage) out.usage = chunk.usage;
  }
  return out;
}
