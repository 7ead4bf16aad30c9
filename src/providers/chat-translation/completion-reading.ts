/** Reading a chat.completion that a bridge translates into another API's answer, refusing a malformed one. */
import { malformedAnswer } from "../provider-error.js";
import type { JsonObject } from "../types.js";
import { isObject } from "./chat-input.js";

/** The completion's first choice and its message; a completion without them is malformed. */
export function firstChoice(completion: JsonObject, provider: string, status: number): { choice: JsonObject; message: JsonObject } {
  const choices = completion["choices"];
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice["message"])) throw malformedAnswer(provider, status, "a chat.completion without choices[0].message");
  return { choice, message: choice["message"] };
}

/** The function name of one of the message's tool calls; a call without one is malformed. */
export function toolCallName(fn: JsonObject, provider: string, status: number): string {
  const name = fn["name"];
  if (typeof name !== "string" || name === "") throw malformedAnswer(provider, status, "a tool call without a function name");
  return name;
}
