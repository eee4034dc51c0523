/** Runtime settings (auth methods, registration, token lifetimes, OAuth providers with their callback URLs), mail, backup and the admin secret. */
import { api, apiDownload, clearToken } from "../api.ts";
import { h, replace, type Child } from "../dom.ts";
import { providerLabel } from "../providers.ts";
import { busy, button, checkbox, confirmDialog, field, openDialog, toast } from "../ui.ts";

type Settings = Record<string, unknown>;

const LABELS: Record<string, string> = {
  app_name: "App name (TOTP issuer, mail sender name)",
  auth_password_enabled: "Email and password",
  auth_magic_link_enabled: "Magic link",
  auth_totp_enabled: "TOTP two-factor",
  auth_oauth_enabled: "OAuth providers",
  auth_api_keys_enabled: "API keys",
  registration_open: "Registration open (sign-up by password or OAuth)",
  require_verified_email: "Require a verified email (recommended for public sign-up)",
  access_token_ttl_seconds: "Access token lifetime (seconds)",
  refresh_token_ttl_days: "Refresh token lifetime (days)",
};

// The API names GitHub `codehost` and Google `portal`; people know them by their names.
const PROVIDERS: [string, string[]][] = [
  ["codehost", ["client_id", "client_secret"]],
  ["portal", ["client_id", "client_secret"]],
  ["oidc", ["issuer", "client_id", "client_secret", "scopes"]],
];
const WHERE_TO_REGISTER: Record<string, string> = {
  codehost: "Register an OAuth app in GitHub (Settings → Developer settings → OAuth Apps) with this callback URL:",
  portal: "Create an OAuth client in the Google Cloud console (APIs & Services → Credentials) with this authorized redirect URI:",
  oidc: "Register a client with your OpenID provider with this redirect URI:",
};

/** The server's public URL, from the page (the callback URL to register with a provider starts with it). */
function publicUrl(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="baas-public-url"]')?.content || location.origin;
}

/** Renders `#/settings`. */
export async function renderSettings(main: HTMLElement, stale: () => boolean): Promise<void> {
  const [loaded, mail] = await Promise.all([
    api<Settings>("GET", "/admin/settings"),
    api<MailStatus>("GET", "/admin/mail").catch(() => null),
  ]);
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
    h(
      "fieldset",
      null,
      h("legend", null, "Registration"),
      control("registration_open"),
      control("require_verified_email"),
      h(
        "p",
        { class: "muted" },
        "With a verified email required, an account whose address was never confirmed gets 403 email_not_verified at password login, refresh and API-key creation, so someone who registers another person's address holds nothing usable. Magic links and OAuth confirm the address themselves.",
      ),
    ),
    h(
      "fieldset",
      null,
      h("legend", null, "Tokens"),
      h("p", { class: "muted" }, "A change applies to tokens issued afterwards."),
      h("div", { class: "grid2" }, control("access_token_ttl_seconds"), control("refresh_token_ttl_days")),
    ),
    PROVIDERS.map(([id, keys]) =>
      h(
        "fieldset",
        { "data-provider": id },
        h("legend", null, `OAuth: ${providerLabel(id)}`),
        h(
          "p",
          { class: "callback" },
          WHERE_TO_REGISTER[id],
          " ",
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
    mail ? mailCard(mail) : null,
    backupCard(),
    secretCard(),
  );
}

interface MailStatus {
  transport: "smtp" | "log";
  smtp_server: string | null;
  from: string;
  sender_name: string;
}

/** Mail: how it is sent (SMTP_URL, MAIL_FROM come from the environment) and a test mail. */
function mailCard(status: MailStatus): HTMLElement {
  const to = h("input", { type: "email", name: "test_mail_to", required: true, placeholder: "you@example.com", autocomplete: "off" });
  const send = h("button", { type: "submit", class: "btn" }, "Send test mail");
  return h(
    "form",
    {
      class: "card",
      "data-mail": status.transport,
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        void busy(send, async () => {
          const res = await api<{ to: string; transport: string }>("POST", "/admin/mail/test", { to: to.value.trim() });
          toast(res.transport === "smtp" ? `Test mail sent to ${res.to}.` : `No SMTP server: the test mail to ${res.to} was written to the server log.`);
        });
      },
    },
    h("h2", null, "Mail"),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Delivery"),
      h("dd", null, status.transport === "smtp" ? `SMTP server ${status.smtp_server}` : "none: mails are written to the server log (set SMTP_URL)"),
      h("dt", null, "Sender"),
      h("dd", null, `${status.sender_name} <${status.from}>`),
    ),
    h("p", { class: "muted" }, "SMTP_URL and MAIL_FROM are set in the server's environment; the sender name is the app name above."),
    h("div", { class: "toolbar-row" }, field("Send a test mail to", to), send),
  );
}

/** Backup: a consistent copy of the whole database, downloaded by the browser. */
function backupCard(): HTMLElement {
  const download = button(
    "Download backup",
    (ev) =>
      void busy(ev.currentTarget as HTMLButtonElement, async () => {
        const { blob, filename } = await apiDownload("/admin/backup");
        const url = URL.createObjectURL(blob);
        const a = h("a", { href: url, download: filename });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
        toast(`Backup ${filename} downloaded (${blob.size} bytes).`);
      }),
    { kind: "primary" },
  );
  return actionCard("Backup", "One consistent snapshot of the database (safe while the server runs). Restore it by stopping the server and putting the file in place of baas.db.", download);
}

/** A card with a title, an explanation and one action. */
function actionCard(title: string, text: string, action: HTMLElement): HTMLElement {
  return h("div", { class: "card" }, h("h2", null, title), h("p", { class: "muted" }, text), action);
}

/** Secret rotation: a new admin secret, shown once; every admin token (this console's too) stops working. */
function secretCard(): HTMLElement {
  const rotate = button(
    "Rotate admin secret",
    (ev) =>
      void (async (btn: HTMLButtonElement) => {
        const ok = await confirmDialog(
          "Make a new admin secret?",
          "The old secret and every admin token stop working at once, this console's included: you log in again with the new secret.",
          { confirmLabel: "Rotate secret" },
        );
        if (!ok) return;
        await busy(btn, async () => {
          const { secret } = await api<{ secret: string }>("POST", "/admin/rotate-secret");
          const shown = h("input", { type: "text", readonly: true, name: "new_secret", value: secret, class: "code" });
          openDialog({
            title: "New admin secret",
            submitLabel: "Log in again",
            body: [h("p", null, "Store it now: it is shown only this once."), field("Admin secret", shown)],
            onSubmit: async () => {
              // The token died with the old secret: back to the login form, then here again.
              clearToken();
              location.reload();
            },
          });
          shown.select();
        });
      })(ev.currentTarget as HTMLButtonElement),
    { kind: "danger" },
  );
  return actionCard("Admin secret", "When ADMIN_SECRET is set in the server's environment, it is the secret: change it there instead.", rotate);
}
