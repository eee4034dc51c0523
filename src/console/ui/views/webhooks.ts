/** Webhooks: list, add, enable/disable, remove; a webhook's delivery attempts with retry. */
import { api, seg } from "../api.ts";
import { fmtTime, h, replace } from "../dom.ts";
import { badge, busy, button, checkbox, confirmDialog, field, showError, table, toast } from "../ui.ts";
import type { CollectionJson } from "./collections.ts";
import type { WebhookJson } from "../../../webhooks/rows.ts";
import type { AttemptJson } from "../../../webhooks/store.ts";

// The admin API's own answer types (type-only: nothing of the server goes into the console's bundle).
type Webhook = WebhookJson;
type Attempt = AttemptJson;

const ACTIONS = ["create", "update", "delete", "restore"];

/** Renders `#/webhooks`; after an add, with the new webhook's secret (shown this once). */
export async function renderWebhooks(main: HTMLElement, stale: () => boolean, added?: Webhook): Promise<void> {
  const [hooks, cols] = await Promise.all([api<{ items: Webhook[] }>("GET", "/admin/webhooks"), api<{ items: CollectionJson[] }>("GET", "/admin/collections")]);
  if (stale()) return;
  const reload = () => renderWebhooks(main, stale).catch((e) => showError(e));
  const url = h("input", { type: "url", name: "url", required: true, spellcheck: "false", placeholder: "https://example.com/hooks/baas" });
  const collections = h(
    "select",
    { name: "collections", multiple: true, required: true, size: Math.min(6, cols.items.length + 1) },
    h("option", { value: "*" }, "* (every collection)"),
    cols.items.map((c) => h("option", { value: c.name }, c.name)),
  );
  const actions = ACTIONS.map((a) => checkbox(a, true, { name: `action_${a}` }));
  const secret = h("input", { type: "text", name: "secret", spellcheck: "false", autocomplete: "off", placeholder: "optional: one is made" });
  const created = added
    ? h(
        "div",
        { class: "alert ok", role: "status" },
        h("strong", null, "Webhook added. "),
        "Its secret is shown only now: ",
        h("code", { class: "secret" }, added.secret),
      )
    : h("div");
  const add = h("button", { type: "submit", class: "btn primary" }, "Add webhook");
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Webhooks")),
    h(
      "p",
      { class: "muted" },
      "Each committed change of the chosen collections is POSTed as JSON { collection, action, record }, signed with X-Baas-Signature (HMAC-SHA256 of the body with the secret), and retried with backoff for 24 hours until the receiver answers 2xx.",
    ),
    created,
    h(
      "div",
      { class: "card" },
      table(
        ["URL", "Collections", "Actions", "State", "Pending", "Created", ""],
        hooks.items.map((w) => [
          h("a", { href: `#/webhooks/${seg(w.id)}` }, h("code", null, w.url)),
          w.collections.join(", "),
          w.actions.join(", "),
          w.enabled ? badge("enabled", "ok") : badge("disabled", "warn"),
          String(w.pending),
          fmtTime(w.created_at),
          h(
            "span",
            { class: "row-actions" },
            button(w.enabled ? "Disable" : "Enable", async (ev) => {
              await busy(ev.currentTarget as HTMLButtonElement, async () => {
                await api("PATCH", `/admin/webhooks/${seg(w.id)}`, { enabled: !w.enabled });
                toast(w.enabled ? "Webhook disabled." : "Webhook enabled.");
                await reload();
              });
            }),
            button(
              "Remove",
              async (ev) => {
                const btn = ev.currentTarget as HTMLButtonElement;
                const ok = await confirmDialog(`Remove the webhook to ${w.url}?`, w.pending ? `Its ${w.pending} pending deliveries are dropped.` : "Nothing more is sent to it.", {
                  confirmLabel: "Remove",
                });
                if (!ok) return;
                await busy(btn, async () => {
                  await api("DELETE", `/admin/webhooks/${seg(w.id)}`);
                  toast("Webhook removed.");
                  await reload();
                });
              },
              { kind: "danger" },
            ),
          ),
        ]),
        { empty: "No webhooks yet." },
      ),
    ),
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(add, async () => {
            const body: Record<string, unknown> = {
              url: url.value.trim(),
              collections: [...collections.selectedOptions].map((o) => o.value),
              actions: ACTIONS.filter((_, i) => actions[i]!.input.checked),
            };
            if (secret.value) body.secret = secret.value;
            const res = await api<Webhook>("POST", "/admin/webhooks", body);
            await renderWebhooks(main, stale, res).catch((e) => showError(e));
          });
        },
      },
      h("h2", null, "New webhook"),
      h("div", { class: "grid3" }, field("URL", url), field("Collections", collections, "Ctrl/Cmd-click to choose several"), field("Secret", secret)),
      h("fieldset", { class: "inline" }, h("legend", null, "Actions"), actions.map((a) => a.el)),
      h("div", { class: "actions" }, add),
    ),
  );
}

const statusBadge = (s: Attempt["status"]) => badge(s, s === "delivered" ? "ok" : s === "failed" ? "" : "warn");

/** Renders `#/webhooks/<id>`: the last 100 attempts, newest first, each delivery retryable. */
export async function renderWebhook(main: HTMLElement, id: string, stale: () => boolean): Promise<void> {
  const [w, attempts] = await Promise.all([
    api<Webhook>("GET", `/admin/webhooks/${seg(id)}`),
    api<{ items: Attempt[] }>("GET", `/admin/webhooks/${seg(id)}/deliveries`),
  ]);
  if (stale()) return;
  const reload = () => renderWebhook(main, id, stale).catch((e) => showError(e));
  replace(
    main,
    h("p", null, h("a", { href: "#/webhooks" }, "← Webhooks")),
    h("div", { class: "page-head" }, h("h1", null, "Deliveries"), button("Refresh", () => void reload())),
    h(
      "p",
      { class: "muted" },
      h("code", null, w.url),
      ` · ${w.collections.join(", ")} · ${w.actions.join(", ")} · ${w.pending} pending · `,
      w.enabled ? badge("enabled", "ok") : badge("disabled", "warn"),
    ),
    h(
      "div",
      { class: "card" },
      table(
        ["At", "Event", "Attempt", "Result", "Delivery", "Next attempt", ""],
        attempts.items.map((a) => [
          fmtTime(a.at),
          h("span", null, `${a.collection} ${a.action} `, h("code", null, a.record_id)),
          String(a.attempt),
          a.ok ? badge(`${a.response_status}`, "ok") : h("span", { class: "error-text" }, a.error ?? `HTTP ${a.response_status}`),
          statusBadge(a.status),
          a.next_attempt_at === null ? "" : fmtTime(a.next_attempt_at),
          button("Retry", async (ev) => {
            await busy(ev.currentTarget as HTMLButtonElement, async () => {
              await api("POST", `/admin/webhooks/${seg(id)}/deliveries/${seg(a.delivery_id)}/retry`);
              toast("Delivery queued again.");
              await reload();
            });
          }),
        ]),
        { empty: "No attempts yet." },
      ),
    ),
  );
}
