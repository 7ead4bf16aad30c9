/**
 * The cloud providers' key blocks on the wire: bedrock_key_config (AWS credentials and region) and
 * vertex_key_config (project, region and a service account's JSON key), checked at save time so a key
 * that cannot sign or mint a token is a 400 naming the field, never a failure on the first request.
 */
import { createPrivateKey } from "node:crypto";
import { invalidField } from "../../errors.js";
import { REDACTED } from "../../mcp/client-spec.js";
import type { BedrockKeyConfig, ServiceAccount, VertexKeyConfig } from "../../providers/types.js";
import { httpUrl, isWire, requiredString, type Wire } from "../../config/wire-fields.js";

/** Regions go into host names and URL paths: lower-case letters, digits and dashes only. */
const REGION = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/** Project ids go into URL paths (domain-scoped ids have a dot and a colon). */
const PROJECT_ID = /^[A-Za-z0-9.:_-]{1,128}$/;

/** The secret fields of each block, redacted on reads and kept when a write sends the placeholder back. */
export const SECRET_FIELDS: Readonly<Record<string, readonly string[]>> = {
  bedrock_key_config: ["secret_key", "session_token"],
  vertex_key_config: ["auth_credentials"],
};

/** Absent, or an object whose fields are all empty (as an unset block may come back): no block. */
export function isEmptyBlock(raw: unknown): boolean {
  return raw === undefined || raw === null || (isWire(raw) && Object.values(raw).every((v) => v === "" || v === null));
}

function region(value: unknown, path: string, example: string): string {
  const text = requiredString(value, path, `the region, e.g. "${example}"`);
  if (!REGION.test(text)) throw invalidField(path, `"${text}" is not a region name; use one such as "${example}"`);
  return text;
}

function secret(value: unknown, path: string, hint: string): string {
  const text = requiredString(value, path, hint);
  if (text === REDACTED) throw invalidField(path, `has no stored value to keep; send the real secret instead of "${REDACTED}"`);
  return text;
}

/** Reads bedrock_key_config; null when absent. */
export function bedrockOf(raw: unknown, path: string): BedrockKeyConfig | null {
  if (isEmptyBlock(raw)) return null;
  if (!isWire(raw)) throw invalidField(path, "must be an object {access_key, secret_key, session_token?, region}");
  const sessionToken = raw["session_token"] ?? "";
  if (typeof sessionToken !== "string") throw invalidField(`${path}.session_token`, "must be a string");
  if (sessionToken === REDACTED) throw invalidField(`${path}.session_token`, `has no stored value to keep; send the real token instead of "${REDACTED}"`);
  return {
    accessKey: requiredString(raw["access_key"], `${path}.access_key`, "the AWS access key id"),
    secretKey: secret(raw["secret_key"], `${path}.secret_key`, "the AWS secret access key"),
    sessionToken: sessionToken === "" ? null : sessionToken,
    region: region(raw["region"], `${path}.region`, "us-east-1"),
  };
}

/** Parses a service account's JSON key (a JSON string, or the object itself). */
export function serviceAccountOf(raw: unknown, path: string): ServiceAccount {
  let json: unknown = raw;
  if (typeof raw === "string") {
    if (raw === REDACTED) throw invalidField(path, `has no stored value to keep; send the service account's JSON key instead of "${REDACTED}"`);
    try {
      json = JSON.parse(raw);
    } catch {
      throw invalidField(path, "is not JSON: paste the service account's JSON key file (it starts with {\"type\": \"service_account\", ...})");
    }
  } else if (raw === undefined || raw === null || raw === "") {
    throw invalidField(path, "is required: the service account's JSON key (as a string or an object)");
  }
  if (!isWire(json)) throw invalidField(path, "must be the service account's JSON key: an object with client_email, private_key and token_uri");
  const clientEmail = requiredString(json["client_email"], `${path}.client_email`, "the service account's email, from its JSON key");
  const privateKey = requiredString(json["private_key"], `${path}.private_key`, "the PEM private key, from the service account's JSON key");
  try {
    const key = createPrivateKey(privateKey);
    if (key.asymmetricKeyType !== "rsa") throw new Error("not RSA");
  } catch {
    throw invalidField(`${path}.private_key`, "is not a PEM RSA private key (-----BEGIN PRIVATE KEY-----...) as the service account's JSON key holds it");
  }
  const tokenUri = httpUrl(json["token_uri"], `${path}.token_uri`);
  if (tokenUri === null) throw invalidField(`${path}.token_uri`, "is required: the token endpoint, usually https://oauth2.googleapis.com/token");
  const privateKeyId = typeof json["private_key_id"] === "string" && json["private_key_id"] !== "" ? json["private_key_id"] : null;
  return { clientEmail, privateKey, tokenUri, privateKeyId };
}

/** Reads vertex_key_config; null when absent. */
export function vertexOf(raw: unknown, path: string): VertexKeyConfig | null {
  if (isEmptyBlock(raw)) return null;
  if (!isWire(raw)) throw invalidField(path, "must be an object {project_id, region, auth_credentials}");
  const projectId = requiredString(raw["project_id"], `${path}.project_id`, "the Google Cloud project id");
  if (!PROJECT_ID.test(projectId)) throw invalidField(`${path}.project_id`, `"${projectId}" is not a Google Cloud project id`);
  return {
    projectId,
    region: region(raw["region"], `${path}.region`, "us-central1"),
    credentials: serviceAccountOf(raw["auth_credentials"], `${path}.auth_credentials`),
  };
}

/** The stored form of bedrock_key_config. */
export function bedrockWire(config: BedrockKeyConfig): Wire {
  return {
    access_key: config.accessKey,
    secret_key: config.secretKey,
    region: config.region,
    ...(config.sessionToken !== null ? { session_token: config.sessionToken } : {}),
  };
}

/** The stored form of vertex_key_config: the service account kept as the JSON text it came in (or its encoding). */
export function vertexWire(config: VertexKeyConfig, raw: Wire): Wire {
  const credentials = raw["auth_credentials"];
  return {
    project_id: config.projectId,
    region: config.region,
    auth_credentials: typeof credentials === "string" ? credentials : JSON.stringify(credentials),
  };
}

/** A key as reads show it: every secret of its blocks replaced by the placeholder. */
export function redactBlocks(key: Wire): Wire {
  let out = key;
  for (const [block, fields] of Object.entries(SECRET_FIELDS)) {
    const value = key[block];
    if (!isWire(value)) continue;
    const copy: Wire = { ...value };
    for (const field of fields) if (typeof copy[field] === "string" && copy[field] !== "") copy[field] = REDACTED;
    out = { ...out, [block]: copy };
  }
  return out;
}

/** A written key whose block secrets are the placeholder (or left out) gets the stored ones back. */
export function keepBlockSecrets(incoming: Wire, stored: Wire): Wire {
  let out = incoming;
  for (const [block, fields] of Object.entries(SECRET_FIELDS)) {
    const next = incoming[block];
    const old = stored[block];
    if (!isWire(next) || !isWire(old)) continue;
    const merged: Wire = { ...next };
    for (const field of fields) {
      if ((merged[field] === undefined || merged[field] === "" || merged[field] === REDACTED) && old[field] !== undefined) merged[field] = old[field];
    }
    out = { ...out, [block]: merged };
  }
  return out;
}
