/** OpenAI chat-completions request -> Bedrock Converse request (messages, system, toolConfig, inferenceConfig). */
import { callerError, readConversation, readSampling, readToolChoice, readTools, type ChatPart } from "../chat-translation/chat-input.js";
import type { ChatRequest, JsonObject } from "../types.js";

/** The image formats Converse takes. */
const IMAGE_FORMATS = new Set(["png", "jpeg", "gif", "webp"]);

function contentBlock(part: ChatPart): JsonObject {
  switch (part.kind) {
    case "text":
      return { text: part.text };
    case "image": {
      const subtype = (part.mediaType.split("/")[1] ?? "").toLowerCase();
      const format = subtype === "jpg" ? "jpeg" : subtype;
      if (!IMAGE_FORMATS.has(format)) throw callerError("messages", `bedrock takes png, jpeg, gif or webp images, not ${part.mediaType}`);
      return { image: { format, source: { bytes: part.data } } };
    }
    case "image-url":
      throw callerError("messages", "bedrock takes images inline only: send them as base64 data URLs (data:image/png;base64,...)");
    case "tool-call":
      return { toolUse: { toolUseId: part.id, name: part.name, input: part.input } };
    case "tool-result":
      return { toolResult: { toolUseId: part.id, content: [{ text: part.text }] } };
  }
}

/** Builds the Converse body for `req` (the model goes in the URL). */
export function toConverseRequest(req: ChatRequest): JsonObject {
  const conversation = readConversation(req);
  const body: JsonObject = {
    messages: conversation.turns.map((turn) => ({ role: turn.role, content: turn.parts.map(contentBlock) })),
  };
  if (conversation.system.length > 0) body["system"] = conversation.system.map((text) => ({ text }));
  const sampling = readSampling(req);
  const inference: JsonObject = {};
  if (sampling.maxTokens !== null) inference["maxTokens"] = sampling.maxTokens;
  if (sampling.temperature !== null) inference["temperature"] = sampling.temperature;
  if (sampling.topP !== null) inference["topP"] = sampling.topP;
  if (sampling.stop.length > 0) inference["stopSequences"] = sampling.stop;
  if (Object.keys(inference).length > 0) body["inferenceConfig"] = inference;

  const tools = readTools(req);
  const choice = readToolChoice(req);
  const usesTools = conversation.turns.some((turn) => turn.parts.some((part) => part.kind === "tool-call" || part.kind === "tool-result"));
  // Converse has no "none" choice: the tools are left out, unless the conversation already holds tool
  // blocks, which Converse accepts only alongside a toolConfig.
  if (tools !== null && tools.length > 0 && (choice?.kind !== "none" || usesTools)) {
    const toolConfig: JsonObject = {
      tools: tools.map((tool) => ({ toolSpec: { name: tool.name, ...(tool.description !== null ? { description: tool.description } : {}), inputSchema: { json: tool.parameters } } })),
    };
    if (choice?.kind === "auto") toolConfig["toolChoice"] = { auto: {} };
    else if (choice?.kind === "required") toolConfig["toolChoice"] = { any: {} };
    else if (choice?.kind === "tool") toolConfig["toolChoice"] = { tool: { name: choice.name } };
    body["toolConfig"] = toolConfig;
  }
  return body;
}
