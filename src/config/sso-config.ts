/**
 * The `sso` section: the OpenID Connect provider whose users sign in to the gateway (browser login) and
 * whose access tokens callers may send as `Authorization: Bearer`. Absent or with an empty issuer, SSO is off.
 */
import { z } from "zod";

/** Scopes asked for at login when the file names none. */
export const DEFAULT_SSO_SCOPES = ["openid", "email", "profile"] as const;

/** The claim whose values are matched against admin_groups when the file names none. */
export const DEFAULT_ADMIN_GROUP_CLAIM = "groups";

/** The section as written in the file; unknown keys name the allowed ones. */
const ssoFileSchema = z.strictObject(
  {
    issuer: z.string().nullish(),
    client_id: z.string().nullish(),
    client_secret: z.string().nullish(),
    scopes: z.array(z.string().min(1, "must not be empty")).nullish(),
    admin_emails: z.array(z.string().min(1, "must not be empty")).nullish(),
    admin_group_claim: z.string().min(1, "must not be empty").nullish(),
    admin_groups: z.array(z.string().min(1, "must not be empty")).nullish(),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? "allowed keys: issuer, client_id, client_secret, scopes, admin_emails, admin_group_claim, admin_groups" : undefined,
  },
);

/** The normalized `sso` section, every default filled in; `issuer` "" means SSO is off. */
export interface SsoSettings {
  /** The issuer URL exactly as the provider's tokens carry it in `iss`. */
  issuer: string;
  /** The gateway's client at the provider; also the audience IdP bearer tokens must carry. */
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Signed-in users with one of these emails (case-insensitive) are admins. */
  adminEmails: string[];
  adminGroupClaim: string;
  /** Signed-in users whose admin_group_claim lists one of these are admins. */
  adminGroups: string[];
}

/** SSO off. */
export const SSO_OFF: SsoSettings = {
  issuer: "",
  clientId: "",
  clientSecret: "",
  scopes: [...DEFAULT_SSO_SCOPES],
  adminEmails: [],
  adminGroupClaim: DEFAULT_ADMIN_GROUP_CLAIM,
  adminGroups: [],
};

/** Parses and checks the section: an issuer must be an http(s) URL and then client_id is required. */
export const ssoSchema = ssoFileSchema
  .nullish()
  .superRefine((sso, ctx) => {
    if (!sso || !sso.issuer) {
      for (const field of ["client_id", "client_secret", "admin_emails", "admin_groups"] as const) {
        const value = sso?.[field];
        if (value != null && value.length > 0) ctx.addIssue({ code: "custom", path: [field], message: "needs sso.issuer: without an issuer SSO is off" });
      }
      return;
    }
    let url: URL | undefined;
    try {
      url = new URL(sso.issuer);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      ctx.addIssue({ code: "custom", path: ["issuer"], message: "must be the provider's issuer URL (https://...), as its tokens carry it in iss" });
    }
    if (!sso.client_id) ctx.addIssue({ code: "custom", path: ["client_id"], message: "is required when sso.issuer is set: the gateway's client id at the provider" });
  })
  .transform((sso): SsoSettings => {
    if (!sso || !sso.issuer) return { ...SSO_OFF, scopes: [...SSO_OFF.scopes] };
    return {
      issuer: sso.issuer,
      clientId: sso.client_id ?? "",
      clientSecret: sso.client_secret ?? "",
      scopes: sso.scopes && sso.scopes.length > 0 ? [...sso.scopes] : [...DEFAULT_SSO_SCOPES],
      adminEmails: (sso.admin_emails ?? []).map((email) => email.toLowerCase()),
      adminGroupClaim: sso.admin_group_claim ?? DEFAULT_ADMIN_GROUP_CLAIM,
      adminGroups: sso.admin_groups ?? [],
    };
  });

/** True when an issuer is configured. */
export function ssoEnabled(sso: SsoSettings): boolean {
  return sso.issuer !== "";
}
