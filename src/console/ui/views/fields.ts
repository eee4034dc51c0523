/** A collection's fields: declare, rename, change type (every value converts, or nothing changes), drop; and its stats. */
import { api, ApiError, seg } from "../api.ts";
import { fmtTime, h, replace, type Child } from "../dom.ts";
import { badge, busy, confirmDialog, field, openDialog, table, toast } from "../ui.ts";
import type { CollectionJson, Stats } from "./collections.ts";
import { relationText, type FieldRelations } from "./links.ts";

export const SYSTEM_FIELDS = ["_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at"];
export const FIELD_TYPES = ["text", "number", "boolean", "json"];

/** What a change of type does to values, as the dialog says it. */
const CONVERSIONS = 'Every stored value converts: "12" → 12, 1 → "1", "true"/"false" ↔ true/false, any value → json. If one does not, nothing changes.';

/** A button of a field's row, named for assistive technology with the field it acts on. */
function rowButton(label: string, name: string, onClick: (ev: MouseEvent) => void, kind = ""): HTMLButtonElement {
  return h("button", { type: "button", class: `btn ${kind}`.trim(), "aria-label": name, title: name, onclick: onClick }, label);
}

function typeSelect(value: string): HTMLSelectElement {
  return h("select", { name: "type" }, FIELD_TYPES.map((t) => h("option", { value: t, selected: t === value }, t)));
}

/** Renders the "Fields & stats" tab; `reload` renders the collection again after a change. */
export function renderFields(body: HTMLElement, col: CollectionJson, stats: Stats | null, rels: FieldRelations, reload: () => void): void {
  const path = `/admin/collections/${seg(col.name)}/fields`;
  const name = h("input", { type: "text", name: "name", required: true, autocomplete: "off", spellcheck: "false", pattern: "[A-Za-z][A-Za-z0-9_]{0,63}" });
  const type = typeSelect("text");
  const add = h("button", { type: "submit", class: "btn primary" }, "Add field");
  // A relation field by its relation: a `one` field holds the target's _id (a text column); `many` and
  // `many_via` fields are lists of ids, with no column of their own (and nothing to rename or retype here).
  const relationCell = (name: string, stored: string | null): Child => {
    const r = rels.get(name)!;
    const what = r.type === "one" ? `relation (the _id, stored as ${stored ?? "text"})` : "relation (a list of ids, no column)";
    return h("span", null, h("a", { href: `#/collections/${seg(r.to_col)}` }, relationText(r)), " ", h("span", { class: "muted" }, what));
  };
  const relationOnly: Child[][] = [...rels.keys()].filter((n) => !col.fields.some((f) => f.name === n)).map((n) => [h("code", null, n), relationCell(n, null), "", ""]);
  const rows: Child[][] = col.fields.map((f) => [
    h("code", null, f.name),
    rels.has(f.name) ? relationCell(f.name, f.type) : f.type,
    col.fts.enabled && col.fts.fields.includes(f.name) ? badge("full text", "info") : "",
    h(
      "div",
      { class: "row-actions" },
      rowButton("Rename", `Rename ${f.name}`, () => renameField(col, f.name, reload)),
      rowButton("Change type", `Change the type of ${f.name}`, () => retypeField(col, f, reload)),
      rowButton("Drop", `Drop ${f.name}`, (ev) => void dropField(ev.currentTarget as HTMLButtonElement, col, f, reload), "danger"),
    ),
  ]);
  const sys: Child[][] = SYSTEM_FIELDS.map((n) => [h("code", null, n), n === "_id" || n === "_owner_id" ? "text" : "number", badge("system"), ""]);
  replace(
    body,
    h(
      "div",
      { class: "card" },
      h("h2", null, "Stats"),
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Records (not deleted)"),
        h("dd", null, stats ? String(stats.row_count) : "—"),
        h("dt", null, "Last write"),
        h("dd", null, fmtTime(stats?.last_write)),
        h("dt", null, "Created"),
        h("dd", null, fmtTime(col.created_at)),
        h("dt", null, "Updated"),
        h("dd", null, fmtTime(col.updated_at)),
      ),
    ),
    h(
      "div",
      { class: "card" },
      h("h2", null, "Fields"),
      h(
        "p",
        { class: "muted" },
        "A field declared here is filterable, sortable, indexable and searchable at once. A field a record sets first also appears by itself, typed by its first value. Renaming keeps values; field rules, indexes, full text and relations follow.",
      ),
      h("div", { class: "fields-table" }, table(["Name", "Type", "", ""], [...rows, ...relationOnly, ...sys])),
    ),
    h(
      "form",
      {
        class: "card",
        "aria-label": "New field",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(add, async () => {
            await api("POST", path, { name: name.value.trim(), type: type.value });
            toast(`Field ${name.value.trim()} added.`);
            reload();
          });
        },
      },
      h("h2", null, "New field"),
      h("div", { class: "inline-form" }, field("Name", name, "A letter, then letters, digits or _ (at most 64)."), field("Type", type), add),
    ),
  );
}

function renameField(col: CollectionJson, from: string, reload: () => void): void {
  const to = h("input", { type: "text", name: "name", required: true, value: from, autocomplete: "off", spellcheck: "false" });
  openDialog({
    title: `Rename ${col.name}.${from}`,
    submitLabel: "Rename",
    body: [field("New name", to), h("p", { class: "muted" }, "Values stay. Field rules, indexes, the full-text index and relations follow; an access rule that names the field must change first.")],
    onSubmit: async () => {
      await api("PATCH", `/admin/collections/${seg(col.name)}/fields/${seg(from)}`, { name: to.value.trim() });
      toast(`Field ${from} renamed to ${to.value.trim()}.`);
      reload();
    },
  });
}

function retypeField(col: CollectionJson, f: { name: string; type: string }, reload: () => void): void {
  const type = typeSelect(f.type === "text" ? "number" : "text");
  openDialog({
    title: `Change the type of ${col.name}.${f.name}`,
    submitLabel: "Change type",
    body: [h("p", null, "Now: ", h("code", null, f.type)), field("New type", type), h("p", { class: "muted" }, CONVERSIONS)],
    onSubmit: async () => {
      try {
        await api("PATCH", `/admin/collections/${seg(col.name)}/fields/${seg(f.name)}`, { type: type.value });
      } catch (err) {
        // The 409 of values that do not convert says how many: the dialog shows it, and nothing changed.
        const count = err instanceof ApiError ? err.body?.count : undefined;
        if (typeof count === "number")
          throw new ApiError(err instanceof ApiError ? err.status : 409, "conflict", `${count} value${count === 1 ? "" : "s"} of ${f.name} cannot be converted to ${type.value}: nothing was changed.`);
        throw err;
      }
      toast(`Field ${f.name} is now ${type.value}.`);
      reload();
    },
  });
}

async function dropField(btn: HTMLButtonElement, col: CollectionJson, f: { name: string; type: string }, reload: () => void): Promise<void> {
  // How much data goes: the records (soft-deleted ones too) holding a value in the field.
  const held = await api<{ total: number }>("GET", `/${seg(col.name)}/count?filter=${encodeURIComponent(`${f.name}:ne:null`)}&include_deleted=true`).then(
    (r) => r.total,
    () => null,
  );
  const what = held === null ? "every value stored in it" : held === 1 ? "the value stored in 1 record" : `the values stored in ${held} records`;
  const ok = await confirmDialog(`Drop field ${col.name}.${f.name}?`, `This drops the column and ${what} (${f.type}). It cannot be undone.`, {
    typeToConfirm: f.name,
    confirmLabel: "Drop field",
  });
  if (!ok) return;
  await busy(btn, async () => {
    await api("DELETE", `/admin/collections/${seg(col.name)}/fields/${seg(f.name)}`);
    toast(`Field ${f.name} dropped.`);
    reload();
  });
}
