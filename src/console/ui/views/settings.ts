/** Runtime settings: auth methods, registration, token lifetimes, OAuth providers with their callback URLs. */
import { api } from "../api.ts";
import { h, replace, type Child } from "../dom.ts";
import { busy, checkbox, field, toast } from "../ui.ts";

type Settings = Record<string, unknown>;

const LABELS: Record<string, string> = {
  app_name: "App name (TOTP issuer, mail sender name)",
  auth_password_enabled: "Email and password",
  auth_magic_link_enabled: "Magic link",
  auth_totp_enabled: "TOTP two-factor",
  auth_oauth_enabled: "OAuth providers",
  auth_api_keys_enabled: "API keys",
  registration_open: "Registration open (sign-up by password or OAuth)",
  access_token_ttl_seconds: "Access token lifetime (seconds)",
  refresh_token_ttl_days: "Refresh token lifetime (days)",
};

const PROVIDERS: [string, string, string[]][] = [
  ["codehost", "Code host", ["client_id", "client_secret"]],
  ["portal", "Portal", ["client_id", "client_secret"]],
  ["oidc", "OpenID Connect", ["issuer", "client_id", "client_secret", "scopes"]],
];

/** The server's public URL, from the page (the callback URL to register with a provider starts with it). */
function publicUrl(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="baas-public-url"]')?.content || location.origin;
}

/** Renders `#/settings`. */
export async function renderSettings(main: HTMLElement, stale: () => boolean): Promise<void> {
  const loaded = await api<Settings>("GET", "/admin/settings");
  if (stale()) return;
  const readers = new Map<string, () => unknown>();
  // Read-only: the server's own callback addresses, shown per provider below, never edited.
  const redirects = (loaded.oauth_redirect_urls ?? {}) as Record<string, string>;
  const used = new Set<string>(["oauth_redirect_urls"]);

  const control = (key: string, label = LABELS[key] ?? key): Child => {
    if (!(key in loaded)) return null;
    used.add(key);
    const v = loaded[key];
    if (typeof v === "boolean") {
      const c = checkbox(label, v, { name: key });
      readers.set(key, () => c.input.checked);
      return c.el;
    }
    if (typeof v === "number") {
      const input = h("input", { type: "number", name: key, value: String(v), step: "1" });
      readers.set(key, () => (input.value.trim() === "" ? NaN : Number(input.value)));
      return field(label, input);
    }
    if (v !== null && typeof v === "object") {
      // A structured value this page does not know how to edit is shown, never sent back.
      return h("div", { class: "field" }, h("span", { class: "label" }, label), h("pre", { class: "code" }, JSON.stringify(v, null, 2)));
    }
    const secret = /secret/.test(key);
    const input = h("input", { type: secret ? "password" : "text", name: key, value: String(v ?? ""), autocomplete: "off", spellcheck: "false" });
    readers.set(key, () => input.value);
    return field(label, input, secret && v ? "Stored; shown masked. Type a new value to replace it." : undefined);
  };

  const save = h("button", { type: "submit", class: "btn primary" }, "Save settings");
  const sections: Child[] = [
    h("fieldset", null, h("legend", null, "General"), control("app_name")),
    h(
      "fieldset",
      null,
      h("legend", null, "Auth methods"),
      h("p", { class: "muted" }, "A disabled method answers 403 to new use; existing sessions and API keys keep working."),
      ["auth_password_enabled", "auth_magic_link_enabled", "auth_totp_enabled", "auth_oauth_enabled", "auth_api_keys_enabled"].map((k) => control(k)),
    ),
    h("fieldset", null, h("legend", null, "Registration"), control("registration_open")),
    h(
      "fieldset",
      null,
      h("legend", null, "Tokens"),
      h("p", { class: "muted" }, "A change applies to tokens issued afterwards."),
      h("div", { class: "grid2" }, control("access_token_ttl_seconds"), control("refresh_token_ttl_days")),
    ),
    PROVIDERS.map(([id, title, keys]) =>
      h(
        "fieldset",
        { "data-provider": id },
        h("legend", null, `OAuth: ${title} (${id})`),
        h(
          "p",
          { class: "callback" },
          "Callback URL to register with the provider: ",
          h("code", { "data-callback": id }, redirects[id] ?? `${publicUrl()}/api/v1/auth/oauth/${id}/callback`),
        ),
        h("div", { class: "grid2" }, keys.map((k) => control(`oauth_${id}_${k}`, k.replace("_", " ")))),
      ),
    ),
  ];
  const others = Object.keys(loaded).filter((k) => !used.has(k));
  if (others.length) sections.push(h("fieldset", null, h("legend", null, "Other"), others.map((k) => control(k))));

  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Settings")),
    h(
      "form",
      {
        class: "card settings",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(save, async () => {
            const patch: Settings = {};
            for (const [k, read] of readers) {
              const v = read();
              if (v !== loaded[k]) patch[k] = v;
            }
            if (!Object.keys(patch).length) return toast("No changes to save.");
            const res = await api<Settings>("PATCH", "/admin/settings", patch);
            Object.assign(loaded, res);
            toast(`Settings saved: ${Object.keys(patch).join(", ")}.`);
          });
        },
      },
      sections,
      h("div", { class: "actions sticky" }, save),
    ),
  );
}
