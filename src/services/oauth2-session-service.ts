/**
 * gw.admin.v1.OAuth2SessionService: the grants /mcp clients hold from the gateway's OAuth server, listed
 * and revoked by an admin. Revoking deletes the grant with its codes and tokens, and its access tokens
 * stop working on /mcp at once.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { GatewayError, invalidField } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { OAuth2SessionService } from "../../gen/gw/admin/v1/oauth2_pb.js";
import type { OAuth2Store } from "./oauth2/oauth2-store.js";

/** What the service needs. */
export interface OAuth2SessionServiceDeps {
  oauth2: OAuth2Store;
  logger: Logger;
}

/** Creates the service implementation. */
export function createOAuth2SessionService(deps: OAuth2SessionServiceDeps): ServiceImpl<typeof OAuth2SessionService> {
  return {
    async listOAuth2Sessions() {
      const grants = await deps.oauth2.listGrants();
      return {
        sessions: grants.map((g) => ({
          id: g.id,
          clientId: g.clientId,
          clientName: g.clientName,
          virtualKeyId: g.accountId,
          scopes: g.scopes,
          createdAt: timestampFromDate(g.createdAt),
          ...(g.expiresAt ? { expiresAt: timestampFromDate(g.expiresAt) } : {}),
        })),
      };
    },

    async revokeOAuth2Session(req) {
      if (req.id.trim() === "") throw invalidField("id", "is required");
      if (!(await deps.oauth2.revokeGrant(req.id))) {
        throw new GatewayError("not_found", `OAuth session "${req.id}" does not exist (GET /api/oauth2/sessions lists them)`, { type: "oauth2_session_not_found" });
      }
      deps.logger.info({ grant_id: req.id }, "OAuth session revoked");
      return { status: "success" };
    },
  };
}
