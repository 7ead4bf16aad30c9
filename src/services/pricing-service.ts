/**
 * gw.catalog.v1.PricingService: GET /api/v1/pricing reads the prices in memory (never the database) and
 * POST /api/v1/pricing/sync downloads pricing_url now, answering once the prices are replaced; a failed
 * sync keeps the prices and answers an error naming the problem.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { GatewayError } from "../errors.js";
import { PricingSyncError, type PricingSync } from "../routing/pricing-sync.js";
import { PricingService } from "../../gen/gw/catalog/v1/catalog_pb.js";

/** What the pricing service needs. */
export interface PricingServiceDeps {
  pricing: PricingSync;
}

/** Creates the service implementation. */
export function createPricingService(deps: PricingServiceDeps): ServiceImpl<typeof PricingService> {
  return {
    getPricing(req) {
      const snapshot = deps.pricing.current;
      const entries = snapshot.entries
        .filter((e) => (req.provider === "" || e.provider === req.provider) && (req.model === "" || e.model === req.model))
        .map((e) => ({
          provider: e.provider,
          model: e.model,
          mode: e.mode,
          inputCostPerToken: e.input_cost_per_token,
          outputCostPerToken: e.output_cost_per_token,
          ...(e.max_input_tokens !== undefined ? { maxInputTokens: BigInt(Math.trunc(e.max_input_tokens)) } : {}),
          ...(e.max_output_tokens !== undefined ? { maxOutputTokens: BigInt(Math.trunc(e.max_output_tokens)) } : {}),
          ...(e.cache_read_input_token_cost !== undefined ? { cacheReadInputTokenCost: e.cache_read_input_token_cost } : {}),
          ...(e.cache_creation_input_token_cost !== undefined ? { cacheCreationInputTokenCost: e.cache_creation_input_token_cost } : {}),
        }));
      return { entries, source: snapshot.source, syncedAt: snapshot.syncedAt?.toISOString() ?? "" };
    },

    async syncPricing() {
      try {
        const snapshot = await deps.pricing.syncNow();
        return { status: "success", modelsCount: snapshot.entries.length, syncedAt: snapshot.syncedAt?.toISOString() ?? "" };
      } catch (err) {
        if (!(err instanceof PricingSyncError)) throw err;
        const message = `${err.message}; the ${deps.pricing.current.source} prices stay in use`;
        // A missing pricing_url is the configuration's state, not an outage a retry could outlast.
        if (err.notConfigured) throw new GatewayError("failed_precondition", message, { type: "pricing_sync_failed", httpStatus: 409 });
        throw new GatewayError("unavailable", message, { type: "pricing_sync_failed" });
      }
    },
  };
}
