/** What the k6 scripts share: settings from `-e NAME=value` and the request they send. */

/** A setting from k6's `-e NAME=value` (or the environment), or its default. */
export function env(name: string, fallback: string): string {
  const value = __ENV[name];
  return value === undefined || value === "" ? fallback : value;
}

/** Headers of a gateway call: JSON, and the virtual key GW_VK when one is given. */
export function gatewayHeaders(): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const key = __ENV["GW_VK"];
  if (key) headers["authorization"] = `Bearer ${key}`;
  return headers;
}

/** The chat request every script sends: GW_MODEL (a `provider/model` or a bare model the key routes). */
export function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: env("GW_MODEL", "openai/gpt-4o-mini"),
    messages: [
      { role: "system", content: "You are a concise assistant for backend engineers." },
      { role: "user", content: "Explain in three sentences why keep-alive connections matter for an API gateway." },
    ],
    max_tokens: 160,
    ...(stream ? { stream: true } : {}),
  });
}
