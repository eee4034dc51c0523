/** Relations between collections: list, create, delete. */
import { api, seg } from "../api.ts";
import { fmtTime, h, replace } from "../dom.ts";
import { busy, button, confirmDialog, field, showError, table, toast } from "../ui.ts";
import type { CollectionJson } from "./collections.ts";

interface Relation {
  id: string;
  from_col: string;
  from_field: string;
  to_col: string;
  to_field: string | null;
  type: string;
  on_delete: string;
  created_at: number;
}

/** Renders `#/relations`. */
export async function renderRelations(main: HTMLElement, stale: () => boolean): Promise<void> {
  const [rels, cols] = await Promise.all([
    api<{ items: Relation[] }>("GET", "/admin/relations"),
    api<{ items: CollectionJson[] }>("GET", "/admin/collections"),
  ]);
  if (stale()) return;
  const reload = () => renderRelations(main, stale).catch((e) => showError(e));
  const colSelect = (name: string) => h("select", { name, required: true }, cols.items.map((c) => h("option", { value: c.name }, c.name)));
  const fromCol = colSelect("from_col");
  const toCol = colSelect("to_col");
  const fromField = h("input", { type: "text", name: "from_field", required: true, spellcheck: "false", placeholder: "author" });
  const toField = h("input", { type: "text", name: "to_field", spellcheck: "false", placeholder: "optional (for many)" });
  const type = h("select", { name: "type" }, ["one", "many", "many_via"].map((t) => h("option", { value: t }, t)));
  const onDelete = h("select", { name: "on_delete" }, ["restrict", "cascade", "set_null"].map((t) => h("option", { value: t }, t)));
  const create = h("button", { type: "submit", class: "btn primary" }, "Create relation");
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Relations")),
    h(
      "p",
      { class: "muted" },
      "one: a field holds the _id of a target record. many: a read-only virtual field listing the records that point back. many_via: a field holds an array of target ids. on_delete decides what happens when a target record is deleted.",
    ),
    h(
      "div",
      { class: "card" },
      table(
        ["From", "Type", "To", "On delete", "Created", ""],
        rels.items.map((r) => [
          h("code", null, `${r.from_col}.${r.from_field}`),
          r.type,
          h("code", null, r.to_field ? `${r.to_col}.${r.to_field}` : r.to_col),
          r.on_delete,
          fmtTime(r.created_at),
          button(
            "Delete",
            async (ev) => {
              const btn = ev.currentTarget as HTMLButtonElement;
              const ok = await confirmDialog(`Delete relation ${r.from_col}.${r.from_field}?`, "The field's values stay; they are no longer checked or expanded.");
              if (!ok) return;
              await busy(btn, async () => {
                await api("DELETE", `/admin/relations/${seg(r.id)}`);
                toast("Relation deleted.");
                await reload();
              });
            },
            { kind: "danger" },
          ),
        ]),
        { empty: "No relations yet." },
      ),
    ),
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(create, async () => {
            const body: Record<string, unknown> = {
              from_col: fromCol.value,
              from_field: fromField.value.trim(),
              to_col: toCol.value,
              type: type.value,
              on_delete: onDelete.value,
            };
            if (toField.value.trim()) body.to_field = toField.value.trim();
            await api("POST", "/admin/relations", body);
            toast("Relation created.");
            await reload();
          });
        },
      },
      h("h2", null, "New relation"),
      h(
        "div",
        { class: "grid3" },
        field("From collection", fromCol),
        field("From field", fromField),
        field("Type", type),
        field("To collection", toCol),
        field("To field", toField),
        field("On delete", onDelete),
      ),
      h("div", { class: "actions" }, create),
    ),
  );
}
