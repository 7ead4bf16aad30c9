/**
 * gw.catalog.v1.ModelService: GET /v1/models (the catalog's models, `provider/model`, optionally of one
 * provider) and the coding-agent listing GET /anthropic/v1/models (the models the caller's virtual key may
 * use, names without the provider prefix, in the Anthropic list shape). Both read memory only.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { GatewayError, invalidField } from "../errors.js";
import { servableModels } from "../routing/key-selection.js";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { ModelService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import { callerVirtualKey } from "./inference/caller.js";
import type { Inference } from "./inference/state.js";

/** What the model service needs. */
export interface ModelServiceDeps {
  inference: Inference;
  settings: RuntimeSettings;
}

/** The default and largest page of the compatibility listing. */
const MAX_COMPAT_LIMIT = 1000;

/** Creates the service implementation. */
export function createModelService(deps: ModelServiceDeps): ServiceImpl<typeof ModelService> {
  const { inference } = deps;
  // One stable timestamp: the catalog has no per-model creation time, and clients sort by it.
  const created = Math.floor(Date.now() / 1000);
  const createdAt = new Date(created * 1000).toISOString();

  return {
    listModels(req) {
      const providers = req.provider === "" ? [...inference.providers.keys()].sort() : [req.provider];
      if (req.provider !== "" && !inference.providers.has(req.provider)) {
        throw new GatewayError("not_found", `provider "${req.provider}" is not configured; GET /api/v1/providers lists the configured ones`, { field: "provider", type: "provider_not_found" });
      }
      const data = providers.flatMap((provider) =>
        inference.catalog.modelsOf(provider).map((model) => ({ id: `${provider}/${model}`, object: "model", created: BigInt(created), ownedBy: provider })),
      );
      return { object: "list", data };
    },

    listCompatModels(req, ctx) {
      if (req.limit < 0) throw invalidField("limit", `must be a whole number from 1 to ${MAX_COMPAT_LIMIT}, got ${req.limit}`);
      const limit = Math.min(req.limit === 0 ? MAX_COMPAT_LIMIT : req.limit, MAX_COMPAT_LIMIT);
      const key = callerVirtualKey((name) => ctx.requestHeader.get(name), inference, deps.settings);
      const names = new Set<string>();
      if (key === null) {
        for (const provider of [...inference.providers.keys()].sort()) for (const model of inference.catalog.modelsOf(provider)) names.add(model);
      } else {
        for (const config of key.providerConfigs) {
          // Only what a request would be routed to: a model no permitted key serves (or a blocked provider) is not offered.
          const keys = inference.providers.get(config.provider)?.keys ?? [];
          for (const model of servableModels(config, keys, inference.catalog)) names.add(model);
        }
      }
      const all = [...names];
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
