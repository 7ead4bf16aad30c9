/** One configured upstream provider with its keys (table provider). */
import { EntitySchema, OptionalProps } from "@mikro-orm/core";
import { EncryptedJsonType } from "../encrypted-json-type.js";

/**
 * A provider's keys and settings as the wire JSON the API and the config file speak (snake_case); the
 * services layer validates it before it is stored, so a stored value is always valid.
 */
export type ProviderWireJson = Record<string, unknown>;

/** A provider; `keys` holds the secret values, so it is encrypted at rest as a whole. */
export class ProviderRecord {
  declare [OptionalProps]?: "networkConfig" | "concurrencyAndBufferSize" | "listedModels" | "source" | "createdAt" | "updatedAt";

  declare name: string;
  /** The key list, [{id, name, value, models, aliases, weight, azure_key_config, ...}]. */
  declare keys: ProviderWireJson[];
  /** {base_url, default_request_timeout_in_seconds, max_retries}. */
  declare networkConfig: ProviderWireJson;
  /** {concurrency, buffer_size}; null when the provider's calls are not limited. */
  declare concurrencyAndBufferSize: ProviderWireJson | null;
  /** Model ids the provider's list-models API last reported (empty until fetched or after a clear). */
  declare listedModels: string[];
  declare source: "api" | "config";
  declare createdAt: Date;
  declare updatedAt: Date;
}

/** Mapping of ProviderRecord. */
export const ProviderSchema = new EntitySchema<ProviderRecord>({
  class: ProviderRecord,
  tableName: "provider",
  properties: {
    name: { type: "string", primary: true },
    keys: { type: new EncryptedJsonType<ProviderWireJson[]>() },
    networkConfig: { type: "json", onCreate: () => ({}) },
    concurrencyAndBufferSize: { type: "json", nullable: true },
    listedModels: { type: "json", onCreate: () => [] },
    source: { enum: true, items: ["api", "config"], onCreate: () => "api" },
    createdAt: { type: "datetime", onCreate: () => new Date() },
    updatedAt: { type: "datetime", onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
