/** Values interceptors put on every call's context for the services to read. */
import { createContextKey } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";

/** The unit of work of this call: a fresh EntityManager fork, set by the store interceptor. */
export const kEntityManager = createContextKey<EntityManager | undefined>(undefined, { description: "entity manager" });

/** The signed-in admin, when the call carries a valid session token. */
export interface AdminPrincipal {
  username: string;
}

/** Set by the auth interceptor on every call: the admin behind the call, or null. */
export const kAdmin = createContextKey<AdminPrincipal | null>(null, { description: "admin principal" });
