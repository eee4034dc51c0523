/** Users: search, create; one user's roles, metadata, verified flag, sessions, impersonation, unlock, delete. */
import { api, seg } from "../api.ts";
import { providerLabel } from "../providers.ts";
import { fmtTime, fmtValue, h, replace } from "../dom.ts";
import { badge, busy, button, checkbox, confirmDialog, field, openDialog, parseJsonInput, showError, table, toast } from "../ui.ts";

interface User {
  id: string;
  email: string;
  is_verified: boolean;
  roles: string[];
  metadata: Record<string, unknown>;
  created_at: number;
  [k: string]: unknown;
}
interface Security {
  totp_enabled: boolean;
  locked_until: number | null;
  oauth_accounts: { provider: string; email: string | null; name: string | null; created_at: number }[];
  api_keys: { id: string; name: string; created_at: number; last_used_at: number | null }[];
}
interface Session {
  id: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number;
  ip: string | null;
  user_agent: string | null;
}

const PAGE_SIZE = 50;
let lastSearch = "";
let lastPage = 1;

/** Renders `#/users`. */
export async function renderUsers(main: HTMLElement, stale: () => boolean): Promise<void> {
  const q = new URLSearchParams({ limit: String(PAGE_SIZE), page: String(lastPage) });
  if (lastSearch) q.set("search", lastSearch);
  const { items, total } = await api<{ items: User[]; total: number }>("GET", `/admin/users?${q}`);
  if (stale()) return;
  const reload = () => renderUsers(main, stale).catch((e) => showError(e));
  const search = h("input", { type: "search", name: "search", value: lastSearch, placeholder: "search by email", "aria-label": "Search users by email" });
  const go = h("button", { type: "submit", class: "btn primary" }, "Search");
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const prev = button("← Previous", () => ((lastPage -= 1), void reload()));
  const next = button("Next →", () => ((lastPage += 1), void reload()));
  prev.disabled = lastPage <= 1;
  next.disabled = lastPage >= pages;
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Users"), button("New user", () => openCreateUser(), { kind: "primary" })),
    h(
      "form",
      {
        class: "toolbar card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          lastSearch = search.value.trim();
          lastPage = 1;
          void busy(go, () => renderUsers(main, stale));
        },
      },
      h("div", { class: "toolbar-row" }, search, go),
    ),
    table(
      ["Email", "Verified", "Roles", "Created"],
      items.map((u) => [
        h("a", { href: `#/users/${seg(u.id)}` }, u.email),
        u.is_verified ? badge("verified", "ok") : badge("unverified"),
        u.roles.length ? u.roles.map((r) => badge(r, "info")) : h("span", { class: "muted" }, "—"),
        fmtTime(u.created_at),
      ]),
      { empty: lastSearch ? "No user matches." : "No users yet." },
    ),
    h("div", { class: "pager" }, prev, h("span", { class: "muted" }, `Page ${lastPage} of ${pages} · ${total} ${total === 1 ? "user" : "users"}`), next),
  );
  search.focus();
}

function openCreateUser(): void {
  const email = h("input", { type: "email", name: "email", required: true, autocomplete: "off" });
  const password = h("input", { type: "password", name: "password", autocomplete: "new-password" });
  const roles = h("input", { type: "text", name: "roles", placeholder: "editor, staff", spellcheck: "false" });
  const verified = checkbox("Email verified", false, { name: "is_verified" });
  openDialog({
    title: "New user",
    submitLabel: "Create",
    body: [
      field("Email", email),
      field("Password", password, "8 to 256 characters. Leave empty for a user who signs in by magic link or OAuth."),
      field("Roles (comma-separated)", roles),
      verified.el,
    ],
    onSubmit: async () => {
      const body: Record<string, unknown> = { email: email.value.trim(), roles: splitList(roles.value), is_verified: verified.input.checked };
      if (password.value) body.password = password.value;
      const u = await api<User>("POST", "/admin/users", body);
      toast(`User ${u.email} created.`);
      location.hash = `#/users/${seg(u.id)}`;
    },
  });
}

function splitList(s: string): string[] {
  return s.split(",").map((x) => x.trim()).filter(Boolean);
}

const KNOWN = new Set(["id", "email", "is_verified", "roles", "metadata", "created_at"]);

/** Renders `#/users/:id`. */
export async function renderUser(main: HTMLElement, id: string, stale: () => boolean): Promise<void> {
  const path = `/admin/users/${seg(id)}`;
  const [user, sessions, security] = await Promise.all([
    api<User>("GET", path),
    api<{ items: Session[] }>("GET", `${path}/sessions`).catch((err) => (showError(err), null)),
    api<Security>("GET", `${path}/security`).catch((err) => (showError(err), null)),
  ]);
  if (stale()) return;
  const reload = () => renderUser(main, id, stale).catch((e) => showError(e));

  const email = h("input", { type: "email", name: "email", value: user.email, required: true });
  const roles = h("input", { type: "text", name: "roles", value: user.roles.join(", "), spellcheck: "false", placeholder: "editor, staff" });
  const verified = checkbox("Email verified", user.is_verified, { name: "is_verified" });
  const metadata = h("textarea", { name: "metadata", rows: 8, spellcheck: "false", class: "code" });
  metadata.value = JSON.stringify(user.metadata ?? {}, null, 2);
  const password = h("input", { type: "password", name: "password", autocomplete: "new-password", placeholder: "leave empty to keep" });
  const save = h("button", { type: "submit", class: "btn primary" }, "Save user");
  const extra = Object.entries(user).filter(([k]) => !KNOWN.has(k));

  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/users" }, "Users"), " / "),
    h(
      "div",
      { class: "page-head" },
      h("h1", null, user.email),
      h(
        "div",
        { class: "head-stats" },
        button("Impersonate", (ev) => void impersonate(ev.currentTarget as HTMLButtonElement, user), { title: "Get a 5-minute access token acting as this user" }),
        button("Unlock", (ev) =>
          void busy(ev.currentTarget as HTMLButtonElement, async () => {
            await api("POST", `${path}/unlock`);
            toast(`${user.email} unlocked: failed logins cleared.`);
          }),
        ),
        button("Delete user", (ev) => void deleteUser(ev.currentTarget as HTMLButtonElement, user), { kind: "danger" }),
      ),
    ),
    h(
      "dl",
      { class: "facts card" },
      h("dt", null, "Id"),
      h("dd", null, h("code", null, user.id)),
      h("dt", null, "Created"),
      h("dd", null, fmtTime(user.created_at)),
      extra.map(([k, v]) => [h("dt", null, k), h("dd", null, k.endsWith("_at") ? fmtTime(v) : fmtValue(v, 200))]),
    ),
    security ? securityCard(user, security, reload) : null,
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(save, async () => {
            const body: Record<string, unknown> = {
              roles: splitList(roles.value),
              is_verified: verified.input.checked,
              metadata: parseJsonInput(metadata.value, "metadata"),
            };
            if (email.value.trim() !== user.email) body.email = email.value.trim();
            if (password.value) body.password = password.value;
            await api("PATCH", path, body);
            toast("User saved.");
            await reload();
          });
        },
      },
      h("h2", null, "Account"),
      h("div", { class: "grid2" }, field("Email", email), field("New password", password)),
      field("Roles (comma-separated)", roles, "Roles reach the user's tokens at the next login or refresh."),
      verified.el,
      field("Metadata (JSON object)", metadata, "At most 64 KB and 3 levels deep."),
      h("div", { class: "actions" }, save),
    ),
    h(
      "div",
      { class: "card" },
      h(
        "div",
        { class: "page-head" },
        h("h2", null, "Sessions"),
        sessions?.items.length
          ? button(
              "Revoke all sessions",
              (ev) =>
                void busy(ev.currentTarget as HTMLButtonElement, async () => {
                  const res = await api<{ sessions_revoked: number }>("DELETE", `${path}/sessions`);
                  toast(`${res.sessions_revoked} session(s) revoked.`);
                  await reload();
                }),
              { kind: "danger" },
            )
          : null,
      ),
      sessions
        ? table(
            ["Session", "Created", "Last used", "Expires", "IP", "User agent", ""],
            sessions.items.map((s) => [
              h("code", { class: "id" }, s.id),
              fmtTime(s.created_at),
              fmtTime(s.last_used_at),
              fmtTime(s.expires_at),
              s.ip ?? "—",
              h("span", { class: "cell", title: s.user_agent ?? "" }, fmtValue(s.user_agent ?? "—", 40)),
              button(
                "Revoke",
                (ev) =>
                  void busy(ev.currentTarget as HTMLButtonElement, async () => {
                    await api("DELETE", `/admin/sessions/${seg(s.id)}`);
                    toast("Session revoked: its tokens stop working now.");
                    await reload();
                  }),
                { kind: "danger" },
              ),
            ]),
            { empty: "No active sessions.", rowAttrs: (i) => ({ "data-session": sessions.items[i].id }) },
          )
        : h("p", { class: "empty" }, "Sessions could not be loaded."),
    ),
  );
}

/** 2FA (with reset), lockout, linked OAuth accounts and API keys (with revoke) of one user. */
function securityCard(user: User, sec: Security, reload: () => Promise<void>): HTMLElement {
  const path = `/admin/users/${seg(user.id)}`;
  const resetTotp = async (btn: HTMLButtonElement) => {
    const ok = await confirmDialog(
      `Turn off 2FA for ${user.email}?`,
      "Their authenticator secret and recovery codes are deleted; they sign in with their password alone until they set up 2FA again.",
      { confirmLabel: "Reset 2FA" },
    );
    if (!ok) return;
    await busy(btn, async () => {
      await api("POST", `${path}/reset-2fa`);
      toast(`Two-factor authentication is off for ${user.email}.`);
      await reload();
    });
  };
  return h(
    "div",
    { class: "card", "data-security": "" },
    h("h2", null, "Sign-in security"),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Two-factor"),
      h(
        "dd",
        { "data-totp": sec.totp_enabled ? "on" : "off" },
        sec.totp_enabled ? badge("on", "ok") : badge("off"),
        sec.totp_enabled ? [" ", button("Reset 2FA", (ev) => void resetTotp(ev.currentTarget as HTMLButtonElement), { kind: "danger" })] : null,
      ),
      h("dt", null, "Locked until"),
      h("dd", { "data-locked": sec.locked_until === null ? "no" : "yes" }, sec.locked_until === null ? "not locked" : fmtTime(sec.locked_until)),
      h("dt", null, "Linked accounts"),
      h(
        "dd",
        null,
        sec.oauth_accounts.length
          ? sec.oauth_accounts.map((a) => badge(`${providerLabel(a.provider)}${a.email ? `: ${a.email}` : ""}`, "info"))
          : h("span", { class: "muted" }, "none"),
      ),
    ),
    h("h3", null, "API keys"),
    table(
      ["Name", "Created", "Last used", ""],
      sec.api_keys.map((k) => [
        k.name,
        fmtTime(k.created_at),
        fmtTime(k.last_used_at),
        button(
          "Revoke",
          (ev) =>
            void busy(ev.currentTarget as HTMLButtonElement, async () => {
              await api("DELETE", `${path}/api-keys/${seg(k.id)}`);
              toast(`API key "${k.name}" revoked.`);
              await reload();
            }),
          { kind: "danger" },
        ),
      ]),
      { empty: "No API keys.", rowAttrs: (i) => ({ "data-api-key": sec.api_keys[i].id }) },
    ),
  );
}

async function impersonate(btn: HTMLButtonElement, user: User): Promise<void> {
  await busy(btn, async () => {
    const res = await api<{ access_token: string; expires_in: number }>("POST", `/admin/users/${seg(user.id)}/impersonate`);
    const token = h("textarea", { readonly: true, rows: 4, class: "code", name: "impersonation_token" });
    token.value = res.access_token;
    openDialog({
      title: `Acting as ${user.email}`,
      body: [
        h("p", null, `An access token for ${user.email}, valid ${Math.round(res.expires_in / 60)} minutes, without a session or refresh token. Send it as Authorization: Bearer <token>.`),
        field("Access token", token),
        button("Copy", () => void navigator.clipboard?.writeText(res.access_token).then(() => toast("Token copied."), () => token.select())),
      ],
    });
    token.select();
  });
}

async function deleteUser(btn: HTMLButtonElement, user: User): Promise<void> {
  const ok = await confirmDialog(`Delete ${user.email}?`, "The account, its sessions and API keys are removed. It cannot be undone.", {
    typeToConfirm: user.email,
    confirmLabel: "Delete user",
  });
  if (!ok) return;
  await busy(btn, async () => {
    await api("DELETE", `/admin/users/${seg(user.id)}`);
    toast(`User ${user.email} deleted.`);
    location.hash = "#/users";
  });
}
