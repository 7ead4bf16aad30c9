/**
 * gw.catalog.v1.ModelService: GET /v1/models (the models the caller may use, `provider/model`, optionally
 * of one provider) and the coding-agent listing GET /anthropic/v1/models (the models the caller's virtual key may
 * use, names without the provider prefix, in the Anthropic list shape); and the lookup behind
 * GET /v1/models/{id}. All read memory only.
 */
import type { IdpTokens } from "./sso/idp-tokens.js";
import type { ServiceImpl } from "@connectrpc/connect";
import { GatewayError, invalidField } from "../errors.js";
import { servableModels } from "../routing/key-selection.js";
import { routes, type RoutableContext } from "../routing/routable-models.js";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { ModelService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { callerVirtualKey } from "./inference/caller.js";
import type { Inference } from "../inference/state.js";
import type { VirtualKey } from "../routing/types.js";

/** What the model service needs. */
export interface ModelServiceDeps {
  inference: Inference;
  settings: RuntimeSettings;
  /** Tells an IdP bearer token from a virtual key; absent: SSO off. */
  idp?: Pick<IdpTokens, "claimsIssuer">;
}

/** The default and largest page of the compatibility listing. */
const MAX_COMPAT_LIMIT = 1000;

// One stable timestamp per process: the catalog has no per-model creation time, and clients sort by it.
const created = Math.floor(Date.now() / 1000);
const createdAt = new Date(created * 1000).toISOString();

/** One model a caller may use, of one provider. */
interface UsableModel {
  provider: string;
  model: string;
}

/**
 * The models `key` may use, each checked to route as `provider/model`: those its provider configs allow
 * that a key their key_ids permit serves; without a key, every configured provider's catalog models that
 * one of its keys serves.
 */
function usableModels(inference: Inference, key: VirtualKey | null): UsableModel[] {
  const context = routableContext(inference);
  const all = key === null
    ? [...inference.providers.keys()].sort().flatMap((provider) => inference.catalog.modelsOf(provider).map((model) => ({ provider, model })))
    : key.providerConfigs.flatMap((config) => {
        const keys = inference.providers.get(config.provider)?.keys ?? [];
        return servableModels(config, keys, inference.catalog).map((model) => ({ provider: config.provider, model }));
      });
  return all.filter(({ provider, model }) => routes(`${provider}/${model}`, key, context));
}

function routableContext(inference: Inference): RoutableContext {
  return { catalog: inference.catalog, keysOf: (provider) => inference.providers.get(provider)?.keys };
}

/** The bare names of the models the caller (read from its headers) may use, in listing order, each once. */
export type CompatModelNames = (header: (name: string) => string | null | undefined) => string[];

/** The creation time every compatibility-listing entry reports (RFC 3339). */
export const COMPAT_CREATED_AT = createdAt;

/** Creates the name source of the coding-agent listing; throws like a request for a missing or inactive key. */
export function createCompatModelNames(deps: ModelServiceDeps): CompatModelNames {
  return (header) => {
    const key = callerVirtualKey(header, deps.inference, deps.settings, deps.idp);
    const context = routableContext(deps.inference);
    // Names go out without their provider prefix, so each is checked to route as the bare name it is; an
    // aggregator's `vendor/model` that would not (the vendor is a provider too) goes out as `model` when that routes.
    const names = usableModels(deps.inference, key).map(({ model }) => {
      if (routes(model, key, context)) return model;
      const bare = model.slice(model.indexOf("/") + 1);
      return bare !== model && routes(bare, key, context) ? bare : null;
    });
    return [...new Set(names.filter((name): name is string => name !== null))];
  };
}

/** A model in the OpenAI shape, as GET /v1/models/{id} answers. */
export interface OpenAiModel {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

/**
 * Creates the lookup of GET /v1/models/{id}: the model when the caller may use it (`provider/model`, or a
 * bare name any of its providers serves), null otherwise. Throws like a request for a missing key under
 * client.enforce_governance or an inactive key.
 */
export function createModelLookup(deps: ModelServiceDeps): (id: string, header: (name: string) => string | null | undefined) => OpenAiModel | null {
  return (id, header) => {
    const key = callerVirtualKey(header, deps.inference, deps.settings, deps.idp);
    const found = usableModels(deps.inference, key).find(({ provider, model }) => id === `${provider}/${model}` || id === model);
    return found === undefined ? null : { id, object: "model", created, owned_by: found.provider };
  };
}

/** Creates the service implementation. */
export function createModelService(deps: ModelServiceDeps): ServiceImpl<typeof ModelService> {
  const { inference } = deps;
  const compatNames = createCompatModelNames(deps);

  return {
    listModels(req, ctx) {
      if (req.provider !== "" && !inference.providers.has(req.provider)) {
        throw new GatewayError("not_found", `provider "${req.provider}" is not configured; GET /api/v1/providers lists the configured ones`, { field: "provider", type: "provider_not_found" });
      }
      const key = callerVirtualKey((name) => ctx.requestHeader.get(name), inference, deps.settings);
      const data = usableModels(inference, key)
        .filter(({ provider }) => req.provider === "" || provider === req.provider)
        .map(({ provider, model }) => ({ id: `${provider}/${model}`, object: "model", created: BigInt(created), ownedBy: provider }));
      return { object: "list", data };
    },

    listCompatModels(req, ctx) {
      if (req.limit < 0) throw invalidField("limit", `must be a whole number from 1 to ${MAX_COMPAT_LIMIT}, got ${req.limit}`);
      const limit = Math.min(req.limit === 0 ? MAX_COMPAT_LIMIT : req.limit, MAX_COMPAT_LIMIT);
      const all = compatNames((name) => ctx.requestHeader.get(name));
      const page = all.slice(0, limit);
      return {
        data: page.map((id) => ({ type: "model", id, displayName: id, createdAt })),
        hasMore: all.length > page.length,
        firstId: page[0] ?? "",
        lastId: page[page.length - 1] ?? "",
      };
    },
  };
}
