import type { AppContext } from "../context.ts";
import { badRequest } from "../errors.ts";
import { allSettingRows, settingValue, storeSetting } from "../tables/settings.ts";

type Kind = "boolean" | "integer" | "string";
interface Def {
  kind: Kind;
  default: boolean | number | string;
  secret?: boolean;
  min?: number;
  max?: number;
}

/** Every runtime setting, its type and default (CONTRACT §3, SPEC 5.3 and 5.6). */
export const SETTING_DEFS = {
  app_name: { kind: "string", default: "baas" },
  access_token_ttl_seconds: { kind: "integer", default: 900, min: 1, max: 31_536_000 },
  refresh_token_ttl_days: { kind: "integer", default: 30, min: 1, max: 3650 },
  auth_password_enabled: { kind: "boolean", default: true },
  auth_magic_link_enabled: { kind: "boolean", default: true },
  auth_totp_enabled: { kind: "boolean", default: true },
  auth_oauth_enabled: { kind: "boolean", default: true },
  auth_api_keys_enabled: { kind: "boolean", default: true },
  registration_open: { kind: "boolean", default: true },
  require_verified_email: { kind: "boolean", default: false },
  oauth_codehost_client_id: { kind: "string", default: "" },
  oauth_codehost_client_secret: { kind: "string", default: "", secret: true },
  oauth_portal_client_id: { kind: "string", default: "" },
  oauth_portal_client_secret: { kind: "string", default: "", secret: true },
  oauth_oidc_issuer: { kind: "string", default: "" },
  oauth_oidc_client_id: { kind: "string", default: "" },
  oauth_oidc_client_secret: { kind: "string", default: "", secret: true },
  oauth_oidc_scopes: { kind: "string", default: "openid email profile" },
  realtime_max_streams_per_ip: { kind: "integer", default: 100, min: 1, max: 1_000_000 },
  realtime_max_topics_per_ip: { kind: "integer", default: 1000, min: 1, max: 10_000_000 },
  // Webhooks may POST to loopback, private and link-local addresses (receivers beside the server); false refuses them.
  webhooks_allow_private_addresses: { kind: "boolean", default: true },
} satisfies Record<string, Def>;

export type SettingKey = keyof typeof SETTING_DEFS;
export type Settings = { [K in SettingKey]: (typeof SETTING_DEFS)[K]["default"] };

export const MASK = "********";

/** All settings with defaults filled in. Read from the database on each call, so a change applies at once. */
export async function getSettings(ctx: AppContext): Promise<Settings> {
  const out: Record<string, unknown> = {};
  for (const [k, d] of Object.entries(SETTING_DEFS)) out[k] = d.default;
  for (const row of await allSettingRows(ctx.db)) {
    if (Object.hasOwn(SETTING_DEFS, row.key)) out[row.key] = JSON.parse(row.value);
  }
  return out as Settings;
}

/** One setting. */
export async function getSetting<K extends SettingKey>(ctx: AppContext, key: K): Promise<Settings[K]> {
  const value = await settingValue(ctx.db, key);
  return (value !== null ? JSON.parse(value) : SETTING_DEFS[key].default) as Settings[K];
}

/** Read-only key of the admin settings object: the callback address to register with each OAuth provider. */
export const OAUTH_REDIRECT_URLS = "oauth_redirect_urls";

/** The callback address to register with an OAuth provider (SPEC 5.6). */
export function oauthCallbackUrl(ctx: AppContext, provider: string): string {
  return `${ctx.config.publicUrl}/api/v1/auth/oauth/${provider}/callback`;
}

/** Settings as shown to admins: client secrets masked when set, plus the OAuth redirect addresses (read-only). */
export async function settingsForDisplay(ctx: AppContext): Promise<Record<string, unknown>> {
  const s = await getSettings(ctx) as Record<string, unknown>;
  for (const [k, d] of Object.entries(SETTING_DEFS) as [string, Def][]) {
    if (d.secret && s[k]) s[k] = MASK;
  }
  s[OAUTH_REDIRECT_URLS] = Object.fromEntries(["codehost", "portal", "oidc"].map((p) => [p, oauthCallbackUrl(ctx, p)]));
  return s;
}

/** Parses a CLI string into the setting's type ("true", "900", ...). */
export function parseSettingString(key: string, raw: string): unknown {
  // Own keys only: "constructor" or "toString" is no setting, whatever Object.prototype holds.
  const def = Object.hasOwn(SETTING_DEFS, key) ? (SETTING_DEFS as Record<string, Def>)[key] : undefined;
  if (!def) throw badRequest(`unknown setting "${key}"`);
  if (def.kind === "boolean") {
    if (raw === "true" || raw === "false") return raw === "true";
    throw badRequest(`setting "${key}" must be true or false`);
  }
  if (def.kind === "integer") {
    if (!/^-?\d+$/.test(raw.trim())) throw badRequest(`setting "${key}" must be an integer`);
    return Number(raw);
  }
  return raw;
}

/**
 * Stores some settings, each already checked against its type, range and length (the settings schema of
 * the admin API, which the CLI uses too). A masked secret sent back unchanged is kept.
 */
export async function updateSettings(ctx: AppContext, patch: Partial<Settings> & { [OAUTH_REDIRECT_URLS]?: unknown }): Promise<Record<string, unknown>> {
  // The read-only key may come back from a client that PATCHes what it read; it is ignored.
  const entries = Object.entries(patch).filter(([k]) => k !== OAUTH_REDIRECT_URLS);
  const defs = SETTING_DEFS as Record<string, Def>;
  // The app name is the TOTP issuer and the mail sender name: an empty one gives broken otpauth URLs.
  if (typeof patch.app_name === "string" && patch.app_name.trim() === "") throw badRequest(`setting "app_name" must not be empty`);
  const now = ctx.clock.now();
  await ctx.db.transaction(async () => {
    for (const [k, v] of entries) {
      if (defs[k].secret && v === MASK) continue;
      await storeSetting(ctx.db, k, JSON.stringify(v), now);
    }
  });
  return settingsForDisplay(ctx);
}
