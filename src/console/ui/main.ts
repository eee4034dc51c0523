/** The admin console's entry: hash router, layout and login. */
import { api, clearToken, getToken, setToken, setUnauthorizedHandler } from "./api.ts";
import { h, replace } from "./dom.ts";
import { busy, clearFlash, field, loading, setFlashElement, showError } from "./ui.ts";
import { renderApiReference } from "./views/api-reference.ts";
import { renderCollections } from "./views/collections.ts";
import { renderCollection } from "./views/collection.ts";
import { renderHooks } from "./views/hooks.ts";
import { renderRelations } from "./views/relations.ts";
import { renderSchemaPage } from "./views/schema.ts";
import { renderSettings } from "./views/settings.ts";
import { renderUser, renderUsers } from "./views/users.ts";
import { renderWebhook, renderWebhooks } from "./views/webhooks.ts";

const root = document.getElementById("app")!;
let loginNotice = "";

const NAV: [string, string][] = [
  ["#/collections", "Collections"],
  ["#/relations", "Relations"],
  ["#/schema", "Schema"],
  ["#/users", "Users"],
  ["#/webhooks", "Webhooks"],
  ["#/hooks", "Hooks"],
  ["#/settings", "Settings"],
  ["#/api", "API"],
];

/** The route's path segments after `#/`. */
function routeParts(): string[] {
  return location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map((s) => decodeURIComponent(s));
}

setUnauthorizedHandler((message) => {
  loginNotice = `Signed out: ${message}. Log in again.`;
  render();
});

function renderLogin(): void {
  const secret = h("input", { type: "password", name: "secret", autocomplete: "current-password", required: true });
  const error = h("div", { class: "dialog-error" });
  if (loginNotice) replace(error, h("div", { class: "alert error", role: "alert" }, loginNotice));
  const submit = h("button", { type: "submit", class: "btn primary" }, "Log in");
  const form = h(
    "form",
    {
      class: "login card",
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        void busy(
          submit,
          async () => {
            replace(error);
            const res = await api<{ token: string; expires_in: number }>("POST", "/admin/login", { secret: secret.value });
            secret.value = "";
            setToken(res.token, res.expires_in);
            loginNotice = "";
            if (!routeParts().length || routeParts()[0] === "login") location.hash = "#/collections";
            render();
          },
          error,
        );
      },
    },
    h("h1", null, "baas console"),
    h("p", { class: "muted" }, "Log in with the admin secret. Only a 12-hour admin token is kept, in this tab."),
    error,
    field("Admin secret", secret),
    h("div", { class: "actions" }, submit),
  );
  replace(root, h("main", { class: "login-page" }, form));
  secret.focus();
}

function layout(active: string): HTMLElement {
  const flash = h("div", { class: "flash", "aria-live": "assertive" });
  setFlashElement(flash);
  const main = h("main", { id: "main", tabindex: "-1" });
  replace(
    root,
    h("a", { class: "skip", href: "#main", onclick: (e: Event) => (e.preventDefault(), main.focus()) }, "Skip to content"),
    h(
      "header",
      { class: "topbar" },
      h("a", { class: "brand", href: "#/collections" }, "baas"),
      h(
        "nav",
        { "aria-label": "Main" },
        NAV.map(([href, label]) => h("a", { href, "aria-current": href.slice(2) === active ? "page" : null }, label)),
      ),
      h(
        "button",
        {
          type: "button",
          class: "btn subtle",
          onclick: () => {
            clearToken();
            loginNotice = "";
            location.hash = "#/login";
            render();
          },
        },
        "Log out",
      ),
    ),
    flash,
    main,
  );
  return main;
}

let renderSeq = 0;
/** Renders the current route. A newer navigation makes an older, still-loading one give up. */
export function render(): void {
  const seq = ++renderSeq;
  if (!getToken()) return renderLogin();
  const [section = "collections", ...rest] = routeParts();
  if (section === "login") {
    location.hash = "#/collections";
    return;
  }
  const main = layout(section);
  clearFlash();
  main.append(loading());
  const stale = () => seq !== renderSeq;
  const views: Record<string, () => Promise<void>> = {
    collections: () => (rest[0] ? renderCollection(main, rest[0], rest[1] ?? "records", stale, rest[2]) : renderCollections(main, stale)),
    relations: () => renderRelations(main, stale),
    schema: () => renderSchemaPage(main, stale),
    users: () => (rest[0] ? renderUser(main, rest[0], stale) : renderUsers(main, stale)),
    webhooks: () => (rest[0] ? renderWebhook(main, rest[0], stale) : renderWebhooks(main, stale)),
    hooks: () => renderHooks(main, stale),
    settings: () => renderSettings(main, stale),
    api: () => renderApiReference(main, stale),
  };
  const view = views[section];
  if (!view) {
    replace(main, h("h1", null, "Not found"), h("p", null, h("a", { href: "#/collections" }, "Back to collections")));
    return;
  }
  view().catch((err) => {
    if (stale()) return;
    replace(main, h("h1", null, "Something went wrong"));
    showError(err);
  });
}

window.addEventListener("hashchange", render);
render();
