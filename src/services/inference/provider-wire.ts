/**
 * A provider as wire JSON (the proto JSON of gw.catalog.v1.Provider without its name, snake_case), shared
 * by the admin API, the config file and the store: parsed and checked here once, turned into the
 * providers layer's config, and kept in a canonical form for storage.
 */
import { egressPolicy } from "../../config/egress-policy.js";
import { invalidField } from "../../errors.js";
import type { AzureKeyConfig, ProviderKey } from "../../providers/types.js";
import { BUILT_IN_PROVIDERS } from "../../providers/registry.js";
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_RESPONSE_BYTES } from "../../providers/http/upstream-http.js";
import type { CallLimit, ProviderSettings } from "../../inference/state.js";
import { bedrockOf, bedrockWire, vertexOf, vertexWire } from "./cloud-key-wire.js";
import { checkHeaderValue, httpUrl, isWire, numberField, requiredString, stringList, stringMap, weightField, type Wire } from "../../config/wire-fields.js";

/** Provider names: they are the prefix of `provider/model`, so no slash and nothing exotic. */
const PROVIDER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The stored, canonical wire form of a provider. */
export interface ProviderWire {
  keys: Wire[];
  network_config: Wire;
  /** Present only when set, so providers without a limit keep the wire (and seed hash) they always had. */
  concurrency_and_buffer_size?: Wire;
}

/** A parsed provider: what the hot path takes, plus the wire JSON it was read from. */
export interface ParsedProvider extends ProviderSettings {
  wire: ProviderWire;
}

/** Checks a provider name (400 naming `path` when it cannot be used as a model prefix). */
export function checkProviderName(name: string, path: string): void {
  if (!PROVIDER_NAME.test(name)) {
    throw invalidField(path, `"${name}" is not a usable provider name: use 1-64 letters, digits, "_" or "-" (it prefixes model names as provider/model)`);
  }
}

function azureOf(raw: unknown, path: string): AzureKeyConfig | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, "must be an object {endpoint, deployments, api_version}");
  const endpoint = httpUrl(raw["endpoint"], `${path}.endpoint`);
  if (endpoint === null) throw invalidField(`${path}.endpoint`, "is required, e.g. https://my-resource.openai.azure.com");
  const deployments = stringMap(raw["deployments"], `${path}.deployments`, `{"gpt-4o": "my-gpt4o"}`);
  const apiVersion = raw["api_version"] ?? "";
  if (typeof apiVersion !== "string") throw invalidField(`${path}.api_version`, "must be a string such as \"2024-10-21\"");
  return { endpoint, deployments, apiVersion };
}

const VERTEX_EXAMPLE = `{"project_id": "my-project", "region": "us-central1", "auth_credentials": "<the service account's JSON key>"}`;
const BEDROCK_EXAMPLE = `{"access_key": "AKIA...", "secret_key": "...", "region": "us-east-1"}`;

/**
 * A cloud key block: required by its own provider, refused on any other (whose adapter would ignore it).
 * `owner` is the provider the block belongs to.
 */
function blockFor<T>(provider: string, owner: string, block: T | null, path: string, example: string): T | null {
  if (provider === owner && block === null) throw invalidField(path, `is required for ${owner}: ${example}`);
  if (provider !== owner && block !== null) throw invalidField(path, `is only for the ${owner} provider; leave it out of ${provider}'s keys`);
  return block;
}

/** A parsed key plus the wire it came from (the service account keeps its original text). */
type ParsedKey = ProviderKey & { raw: Wire };

function keyOf(provider: string, raw: unknown, path: string): ParsedKey {
  if (!isWire(raw)) throw invalidField(path, "must be an object {id, name, value, models, aliases, weight}");
  const id = requiredString(raw["id"], `${path}.id`, "the key id virtual keys name in key_ids");
  const name = typeof raw["name"] === "string" && raw["name"] !== "" ? raw["name"] : id;
  const value = raw["value"] ?? "";
  if (typeof value !== "string") throw invalidField(`${path}.value`, "must be a string");
  // A value undici would refuse as a header would fail every call made with the key: refused here instead.
  checkHeaderValue(value, `${path}.value`);
  const bedrock = blockFor(provider, "bedrock", bedrockOf(raw["bedrock_key_config"], `${path}.bedrock_key_config`), `${path}.bedrock_key_config`, BEDROCK_EXAMPLE);
  const vertex = blockFor(provider, "vertex", vertexOf(raw["vertex_key_config"], `${path}.vertex_key_config`), `${path}.vertex_key_config`, VERTEX_EXAMPLE);
  // A local Ollama has no API key, and the cloud providers authenticate with their key blocks (where a
  // value would be stored and never sent); every other provider needs one to be reachable at all.
  const block = provider === "bedrock" ? "bedrock_key_config" : provider === "vertex" ? "vertex_key_config" : null;
  if (block !== null && value !== "") throw invalidField(`${path}.value`, `is not used by ${provider}, whose keys authenticate with ${block}: leave value empty`);
  if (value === "" && block === null && provider !== "ollama") throw invalidField(`${path}.value`, "is required: the provider's API key");
  const azure = azureOf(raw["azure_key_config"], `${path}.azure_key_config`);
  if (provider === "azure" && azure === null) {
    throw invalidField(`${path}.azure_key_config`, "is required for azure: {\"endpoint\": \"https://<resource>.openai.azure.com\", \"deployments\": {...}}");
  }
  const models = stringList(raw["models"], `${path}.models`);
  const aliases = stringMap(raw["aliases"], `${path}.aliases`, `{"fast": "gpt-4o-mini"}`);
  return { id, name, value, models, aliases, weight: weightField(raw["weight"], `${path}.weight`), azure, bedrock, vertex, raw };
}

function keyWire({ raw, ...key }: ParsedKey): Wire {
  return {
    id: key.id,
    name: key.name,
    value: key.value,
    models: key.models,
    aliases: key.aliases,
    weight: key.weight,
    ...(key.azure ? { azure_key_config: { endpoint: key.azure.endpoint, deployments: key.azure.deployments, api_version: key.azure.apiVersion } } : {}),
    ...(key.bedrock ? { bedrock_key_config: bedrockWire(key.bedrock) } : {}),
    ...(key.vertex && isWire(raw["vertex_key_config"]) ? { vertex_key_config: vertexWire(key.vertex, raw["vertex_key_config"]) } : {}),
  };
}

/** The longest timeout a provider may set: an hour; a longer wait is a hung upstream, not a slow one. */
const MAX_TIMEOUT_SECONDS = 3_600;
/** The smallest response cap: below it even an error body would not fit. */
const MIN_RESPONSE_BYTES = 1_024;
/** The largest response cap (1 GiB): one answer is held in memory whole. */
const MAX_RESPONSE_BYTES = 1_073_741_824;

/** A whole number from 0 (absent: the gateway default) to `max`. */
function rangeField(value: unknown, path: string, max: number, unit: string): number {
  const n = numberField(value, path, 0);
  if (!(Number.isInteger(n) && n >= 0 && n <= max)) throw invalidField(path, `must be a whole number of ${unit} from 0 (the gateway default) to ${max}, got ${n}`);
  return n;
}

/** A whole number >= `min` (0 when absent). */
function countField(value: unknown, path: string, min: number, meaning: string): number {
  const count = numberField(value, path, 0);
  if (!(Number.isSafeInteger(count) && count >= min)) throw invalidField(path, `must be a whole number >= ${min} (${meaning}), got ${count}`);
  return count;
}

function callLimitOf(raw: unknown, path: string): CallLimit | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, "must be an object {concurrency, buffer_size}, or absent for no limit");
  return {
    concurrency: countField(raw["concurrency"], `${path}.concurrency`, 1, "the most upstream calls in flight at once"),
    bufferSize: countField(raw["buffer_size"], `${path}.buffer_size`, 0, "how many requests may wait for a slot"),
  };
}

/** Parses and checks one provider; `path` prefixes field names in errors (e.g. `providers.openai`). */
export function parseProviderWire(name: string, raw: Wire, path: string): ParsedProvider {
  const rawKeys = raw["keys"] ?? [];
  if (!Array.isArray(rawKeys)) throw invalidField(`${path}.keys`, "must be a list of keys");
  const seen = new Set<string>();
  const keys = rawKeys.map((entry, index) => {
    const key = keyOf(name, entry, `${path}.keys[${index}]`);
    if (seen.has(key.id)) throw invalidField(`${path}.keys[${index}].id`, `"${key.id}" appears twice; key ids must be unique within a provider`);
    seen.add(key.id);
    return key;
  });
  const network = raw["network_config"] ?? {};
  if (!isWire(network)) throw invalidField(`${path}.network_config`, "must be an object {base_url, default_request_timeout_in_seconds, stream_idle_timeout_in_seconds, max_response_bytes}");
  const baseUrl = httpUrl(network["base_url"], `${path}.network_config.base_url`);
  if (baseUrl !== null) egressPolicy().checkUrl(baseUrl, `${path}.network_config.base_url`);
  if (baseUrl === null && !BUILT_IN_PROVIDERS.includes(name)) {
    throw invalidField(`${path}.network_config.base_url`, `is required: "${name}" is not a built-in provider (${BUILT_IN_PROVIDERS.join(", ")}), so it is a custom OpenAI-compatible one and needs its address`);
  }
  const timeoutSeconds = rangeField(network["default_request_timeout_in_seconds"], `${path}.network_config.default_request_timeout_in_seconds`, MAX_TIMEOUT_SECONDS, "seconds");
  const idleSeconds = rangeField(network["stream_idle_timeout_in_seconds"], `${path}.network_config.stream_idle_timeout_in_seconds`, MAX_TIMEOUT_SECONDS, "seconds");
  const maxResponseBytes = numberField(network["max_response_bytes"], `${path}.network_config.max_response_bytes`, 0);
  if (!(Number.isSafeInteger(maxResponseBytes) && (maxResponseBytes === 0 || (maxResponseBytes >= MIN_RESPONSE_BYTES && maxResponseBytes <= MAX_RESPONSE_BYTES)))) {
    throw invalidField(
      `${path}.network_config.max_response_bytes`,
      `must be 0 (the gateway default, ${DEFAULT_MAX_RESPONSE_BYTES}) or a whole number of bytes from ${MIN_RESPONSE_BYTES} to ${MAX_RESPONSE_BYTES}, got ${maxResponseBytes}`,
    );
  }
  const maxRetries = numberField(network["max_retries"], `${path}.network_config.max_retries`, 0);
  if (maxRetries !== 0) {
    // Silently ignoring it would promise resilience the gateway does not give.
    throw invalidField(`${path}.network_config.max_retries`, "same-key retries are not supported; leave it 0 and use fallbacks or several keys (the gateway rotates keys on 429, 401, 403 and 402)");
  }
  const limit = callLimitOf(raw["concurrency_and_buffer_size"], `${path}.concurrency_and_buffer_size`);
  return {
    setup: { name, baseUrl, keys: keys.map(({ raw: _raw, ...key }) => key) },
    timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : null,
    idleTimeoutMs: idleSeconds > 0 ? idleSeconds * 1000 : DEFAULT_IDLE_TIMEOUT_MS,
    maxResponseBytes: maxResponseBytes > 0 ? maxResponseBytes : DEFAULT_MAX_RESPONSE_BYTES,
    limit,
    wire: {
      keys: keys.map(keyWire),
      network_config: {
        base_url: baseUrl ?? "",
        default_request_timeout_in_seconds: timeoutSeconds,
        max_retries: 0,
        // Present only when set, so providers that leave them out keep the wire (and seed hash) they always had.
        ...(idleSeconds > 0 ? { stream_idle_timeout_in_seconds: idleSeconds } : {}),
        ...(maxResponseBytes > 0 ? { max_response_bytes: maxResponseBytes } : {}),
      },
      ...(limit ? { concurrency_and_buffer_size: { concurrency: limit.concurrency, buffer_size: limit.bufferSize } } : {}),
    },
  };
}
