/** The records browser: filter, sort, search, cursor pages, create/edit as JSON, soft delete, restore, hard delete. */
import { api, seg } from "../api.ts";
import { fmtTime, fmtValue, h, replace } from "../dom.ts";
import { follow } from "../live.ts";
import { badge, busy, button, checkbox, confirmDialog, field, loading, openDialog, parseJsonInput, showError, table, toast } from "../ui.ts";
import { SYSTEM_FIELDS } from "./collection.ts";
import type { CollectionJson } from "./collections.ts";

type Rec = Record<string, unknown> & { _id: string; _deleted_at: number | null };
interface Relation {
  from_col: string;
  from_field: string;
  to_col: string;
  type: string;
}
/** Field name → target collection, for the `one` relations of the collection shown. */
type Pickers = Map<string, string>;
interface Page {
  items: Rec[];
  next_cursor: string | null;
  total: number | null;
}

const OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "like", "in"];
const MAX_COLUMNS = 8;

/** Renders the Records tab of a collection. */
export async function renderRecords(body: HTMLElement, col: CollectionJson, stale: () => boolean, onChange: () => Promise<void>): Promise<void> {
  const base = `/${seg(col.name)}`;
  // `one` relations from this collection: their fields get a record picker in the form editor.
  const relations = await api<{ items: Relation[] }>("GET", "/admin/relations").catch(() => ({ items: [] as Relation[] }));
  const pickers: Pickers = new Map(
    relations.items.filter((r) => r.type === "one" && r.from_col.toLowerCase() === col.name.toLowerCase()).map((r) => [r.from_field, r.to_col]),
  );
  const fieldOptions = (selected?: string) =>
    [...SYSTEM_FIELDS, ...col.fields.map((f) => f.name)].map((f) => h("option", { value: f, selected: f === selected }, f));

  const filterRows = h("div", { class: "filters" });
  const addFilter = (fieldName = col.fields[0]?.name ?? "_id") => {
    const fsel = h("select", { name: "filter-field", "aria-label": "Filter field" }, fieldOptions(fieldName));
    const osel = h("select", { name: "filter-op", "aria-label": "Filter operator" }, OPS.map((o) => h("option", { value: o }, o)));
    const val = h("input", { type: "text", name: "filter-value", "aria-label": "Filter value", placeholder: "value (null for NULL)" });
    const row = h("div", { class: "filter-row" }, fsel, osel, val, button("×", () => row.remove(), { title: "Remove this filter" }));
    filterRows.append(row);
    val.focus();
  };
  const sortField = h("select", { name: "sort-field", "aria-label": "Sort by" });
  // A record can add fields: the pickers are rebuilt from a fresh collection after each write.
  const fillPickers = () => {
    replace(sortField, h("option", { value: "" }, "default order"), fieldOptions(sortField.value));
    for (const sel of filterRows.querySelectorAll<HTMLSelectElement>('select[name="filter-field"]')) replace(sel, fieldOptions(sel.value));
  };
  fillPickers();
  const afterWrite = async () => {
    Object.assign(col, await api<CollectionJson>("GET", `/admin/collections/${seg(col.name)}`));
    fillPickers();
    await onChange();
  };
  const sortDir = h("select", { name: "sort-dir", "aria-label": "Sort direction" }, h("option", { value: "asc" }, "ascending"), h("option", { value: "desc" }, "descending"));
  const search = h("input", {
    type: "search",
    name: "search",
    placeholder: col.fts.enabled ? "full-text search" : "search is off: see the hint",
    "aria-label": "Full-text search",
  });
  // Searching needs the collection's full-text index: point to the tab that turns it on.
  const ftsHint = col.fts.enabled
    ? null
    : h("span", { class: "fts-hint muted", "data-fts-hint": "" }, "Search needs the full-text index: ", h("a", { href: `#/collections/${seg(col.name)}/search` }, "turn it on in its tab →"));
  const includeDeleted = checkbox("Include deleted", false, { name: "include_deleted" });
  const limit = h("select", { name: "limit", "aria-label": "Page size" }, [10, 20, 50, 100, 500].map((n) => h("option", { value: String(n), selected: n === 20 }, `${n} per page`)));
  const apply = h("button", { type: "submit", class: "btn primary" }, "Apply");
  const results = h("div", { class: "results", "aria-live": "polite" });
  const liveBadge = badge("not live");

  // Cursor pages: cursors[i] is the `after` of page i+1 (null for the first page).
  let cursors: (string | null)[] = [null];
  let total: number | null = null;

  const params = (): URLSearchParams => {
    const p = new URLSearchParams();
    for (const row of filterRows.querySelectorAll(".filter-row")) {
      const [f, o] = row.querySelectorAll("select");
      const v = row.querySelector("input")!.value;
      p.append("filter", `${f.value}:${o.value}:${v}`);
    }
    if (sortField.value) p.append("sort", `${sortField.value}:${sortDir.value}`);
    if (search.value.trim()) p.set("search", search.value.trim());
    if (includeDeleted.input.checked) p.set("include_deleted", "true");
    p.set("limit", limit.value);
    return p;
  };

  let shownPage = 0;
  const load = async (pageIndex: number, opts: { quiet?: boolean } = {}) => {
    const p = params();
    const after = cursors[pageIndex];
    if (after) p.set("after", after);
    if (!opts.quiet) replace(results, loading());
    let page: Page;
    try {
      page = await api<Page>("GET", `${base}?${p}`);
    } catch (err) {
      replace(results, h("p", { class: "empty" }, "Could not load records."));
      throw err;
    }
    if (stale()) return;
    shownPage = pageIndex;
    if (page.total !== null) total = page.total;
    cursors = cursors.slice(0, pageIndex + 1);
    if (page.next_cursor) cursors.push(page.next_cursor);
    const reload = async () => {
      await load(pageIndex);
      await afterWrite();
    };
    replace(results, recordTable(col, page.items, pickers, reload), pager(pageIndex, page));
  };

  const pager = (pageIndex: number, page: Page) => {
    const prev = button("← Previous", (ev) => void busy(ev.currentTarget as HTMLButtonElement, () => load(pageIndex - 1)));
    const next = button("Next →", (ev) => void busy(ev.currentTarget as HTMLButtonElement, () => load(pageIndex + 1)));
    prev.disabled = pageIndex === 0;
    next.disabled = !page.next_cursor;
    return h("div", { class: "pager" }, prev, h("span", { class: "muted" }, `Page ${pageIndex + 1}`, total !== null ? ` · ${total} matching` : ""), next);
  };

  const form = h(
    "form",
    {
      class: "toolbar card",
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        cursors = [null];
        total = null;
        void busy(apply, () => load(0));
      },
    },
    h(
      "div",
      { class: "toolbar-row" },
      search,
      ftsHint,
      h("div", { class: "inline" }, sortField, sortDir),
      limit,
      includeDeleted.el,
    ),
    filterRows,
    h(
      "div",
      { class: "toolbar-row" },
      button("Add filter", () => addFilter()),
      h("span", { class: "spacer" }),
      liveBadge,
      button("New record", () => editRecord(col, null, pickers, async () => (await load(0), await afterWrite()))),
      apply,
    ),
  );
  replace(body, form, results);
  // The page shown reloads itself (quietly) when records of the collection change, whoever changed them.
  follow([col.name], stale, () => void load(shownPage, { quiet: true }).catch(() => {}), (on) => {
    liveBadge.className = `badge ${on ? "ok" : ""}`.trim();
    liveBadge.textContent = on ? "live" : "not live";
    liveBadge.title = on ? "This page updates itself when records change" : "Live updates are off; Apply reloads";
  });
  await load(0).catch((err) => showError(err));
}

function recordTable(col: CollectionJson, items: Rec[], pickers: Pickers, reload: () => Promise<void>): HTMLElement {
  // Fields created since the collection was loaded show up too.
  const names = new Set(col.fields.map((f) => f.name));
  for (const r of items) for (const k of Object.keys(r)) if (!k.startsWith("_")) names.add(k);
  const shown = [...names].slice(0, MAX_COLUMNS);
  const path = `/${seg(col.name)}`;
  const el = table(
    ["_id", ...shown, "_updated_at", "Status", "Actions"],
    items.map((r) => {
      const deleted = r._deleted_at !== null && r._deleted_at !== undefined;
      const act = (label: string, kind: string, fn: () => Promise<void>, title?: string) =>
        button(label, (ev) => void busy(ev.currentTarget as HTMLButtonElement, fn), { kind, title });
      return [
        h("code", { class: "id" }, r._id),
        ...shown.map((f) =>
          r[f] === null || r[f] === undefined
            ? h("span", { class: "cell nullv", title: "empty (null)", "data-null": "" })
            : h("span", { class: "cell", title: fmtValue(r[f], 2000) }, fmtValue(r[f])),
        ),
        fmtTime(r._updated_at),
        deleted ? badge("deleted", "warn") : badge("active", "ok"),
        h(
          "div",
          { class: "row-actions" },
          deleted
            ? act("Restore", "", async () => {
                await api("POST", `${path}/${seg(r._id)}/restore`);
                toast(`Record ${r._id} restored.`);
                await reload();
              })
            : [
                button("Edit", () => editRecord(col, r, pickers, reload)),
                act("Delete", "", async () => {
                  await api("DELETE", `${path}/${seg(r._id)}`);
                  toast(`Record ${r._id} deleted (soft). Tick "Include deleted" to see and restore it.`);
                  await reload();
                }, "Soft delete: the record can be restored"),
              ],
          act("Hard delete", "danger", async () => {
            const ok = await confirmDialog(`Delete record ${r._id} forever?`, "A hard delete removes the record for good; it cannot be restored.", {
              confirmLabel: "Delete forever",
            });
            if (!ok) return;
            await api("DELETE", `/admin/collections/${seg(col.name)}/records/${seg(r._id)}`);
            toast(`Record ${r._id} deleted for good.`);
            await reload();
          }),
        ),
      ];
    }),
    { empty: "No records match.", rowAttrs: (i) => ({ class: items[i]._deleted_at ? "deleted" : null, "data-id": items[i]._id }) },
  );
  // The actions column sticks to the right edge, so it stays reachable however wide the fields make the table.
  el.classList.add("records-table");
  return el;
}

type FieldReader = () => { present: boolean; value?: unknown };

/** One form control per field, by type; empty means null where the record had the field, else absent. */
function recordForm(col: CollectionJson, data: Record<string, unknown>, pickers: Pickers): { el: HTMLElement; read(): Record<string, unknown> } {
  const types = new Map(col.fields.map((f) => [f.name, f.type]));
  for (const name of pickers.keys()) if (!types.has(name)) types.set(name, "text");
  for (const k of Object.keys(data)) if (!types.has(k)) types.set(k, typeof data[k] === "string" ? "text" : typeof data[k] === "number" ? "number" : typeof data[k] === "boolean" ? "boolean" : "json");
  const readers: [string, FieldReader][] = [];
  const rows = [...types].map(([name, type]) => {
    const v = data[name];
    const had = name in data;
    const empty = () => (had ? { present: true, value: null } : { present: false });
    const label = `${name} (${type})`;
    if (type === "boolean") {
      const sel = h("select", { name: `field-${name}` }, ["", "true", "false"].map((o) => h("option", { value: o, selected: String(v ?? "") === o }, o || "null")));
      readers.push([name, () => (sel.value === "" ? empty() : { present: true, value: sel.value === "true" })]);
      return field(label, sel);
    }
    if (type === "json") {
      const ta = h("textarea", { name: `field-${name}`, rows: 3, spellcheck: "false", class: "code" });
      ta.value = v === null || v === undefined ? "" : JSON.stringify(v, null, 2);
      readers.push([name, () => (ta.value.trim() === "" ? empty() : { present: true, value: parseJsonInput(ta.value, `"${name}"`) })]);
      return field(label, ta);
    }
    const input = h("input", { type: type === "number" ? "number" : "text", step: "any", name: `field-${name}`, value: v === null || v === undefined ? "" : String(v), spellcheck: "false" });
    const target = pickers.get(name);
    if (target) {
      readers.push([name, () => (input.value.trim() === "" ? empty() : { present: true, value: input.value.trim() })]);
      const el = field(`${name} (record of ${target})`, input);
      el.append(recordPicker(name, target, input));
      return el;
    }
    readers.push([
      name,
      () => {
        if (input.value === "" && (type === "number" || v === null || v === undefined)) return empty();
        if (type !== "number") return { present: true, value: input.value };
        const n = Number(input.value);
        if (!Number.isFinite(n)) throw new Error(`"${name}" must be a number`);
        return { present: true, value: n };
      },
    ]);
    return field(label, input);
  });
  return {
    el: h("div", { class: "record-form grid2" }, rows.length ? rows : h("p", { class: "muted" }, "No fields yet: add the first ones as JSON.")),
    read() {
      const out: Record<string, unknown> = {};
      for (const [name, read] of readers) {
        const r = read();
        if (r.present) out[name] = r.value;
      }
      return out;
    },
  };
}

/** The label of a record in a picker: its first non-empty text value, else its id. */
function recordLabel(r: Rec): string {
  const text = Object.entries(r).find(([k, v]) => !k.startsWith("_") && typeof v === "string" && v.trim());
  return text ? fmtValue(text[1], 60) : r._id;
}

/**
 * A search over the target collection of a `one` relation: its full-text index when it has one,
 * else `like` on its first text field; picking a result puts its `_id` into `input`.
 */
function recordPicker(name: string, target: string, input: HTMLInputElement): HTMLElement {
  const query = h("input", { type: "search", name: `pick-${name}`, placeholder: `search ${target}`, "aria-label": `Search ${target} for ${name}` });
  const results = h("div", { class: "picker-results", "data-picker": name });
  let seq = 0;
  const find = async () => {
    const mine = ++seq;
    const tcol = await api<CollectionJson>("GET", `/admin/collections/${seg(target)}`);
    const p = new URLSearchParams({ limit: "8" });
    const q = query.value.trim();
    if (q && tcol.fts.enabled) p.set("search", q);
    else if (q) {
      const text = tcol.fields.find((f) => f.type === "text");
      p.append("filter", text ? `${text.name}:like:${q}` : `_id:eq:${q}`);
    }
    const page = await api<Page>("GET", `/${seg(target)}?${p}`);
    if (mine !== seq) return;
    replace(
      results,
      page.items.length
        ? page.items.map((r) =>
            button(
              [recordLabel(r), " ", h("code", { class: "id" }, r._id)],
              () => {
                input.value = r._id;
                replace(results, h("span", { class: "muted" }, `Picked ${recordLabel(r)}.`));
              },
              { kind: "subtle", title: `Use ${r._id}` },
            ),
          )
        : h("span", { class: "muted" }, "No record matches."),
    );
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  query.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => void find().catch((e) => showError(e)), 200);
  });
  query.addEventListener("keydown", (ev) => {
    // Enter searches now instead of submitting the dialog.
    if (ev.key === "Enter") (ev.preventDefault(), clearTimeout(timer), void find().catch((e) => showError(e)));
  });
  return h("div", { class: "picker" }, query, results);
}

/** The create/edit dialog: the record's user fields as JSON, or as a form with one control per field. */
function editRecord(col: CollectionJson, rec: Rec | null, pickers: Pickers, reload: () => Promise<void>): void {
  const data = rec ? Object.fromEntries(Object.entries(rec).filter(([k]) => !k.startsWith("_"))) : {};
  const text = h("textarea", { name: "record", rows: 14, spellcheck: "false", class: "code" });
  text.value = JSON.stringify(data, null, 2);
  const jsonPane = field("Fields (JSON object)", text, "System fields (_id, _created_at, …) are set by the server. A new field name adds a field; its first value fixes its type.");
  const formPane = h("div", { hidden: true });
  let form: ReturnType<typeof recordForm> | null = null;
  const parseText = () => {
    const body = parseJsonInput(text.value, "the record");
    if (!body || typeof body !== "object" || Array.isArray(body)) throw new Error("the record must be a JSON object");
    return body as Record<string, unknown>;
  };
  const toggle = button("Edit as form", () => {
    try {
      if (form) {
        text.value = JSON.stringify(form.read(), null, 2);
        form = null;
      } else {
        form = recordForm(col, parseText(), pickers);
        replace(formPane, form.el);
      }
      replace(handle.error);
    } catch (err) {
      showError(err, handle.error);
      return;
    }
    formPane.hidden = !form;
    jsonPane.hidden = !!form;
    toggle.textContent = form ? "Edit as JSON" : "Edit as form";
    (form ? formPane.querySelector<HTMLElement>("input, select, textarea") : text)?.focus();
  });
  const handle = openDialog({
    title: rec ? `Edit record ${rec._id}` : `New record in ${col.name}`,
    submitLabel: rec ? "Save" : "Create",
    wide: true,
    body: [
      h("div", { class: "actions left" }, toggle),
      jsonPane,
      formPane,
      rec ? h("details", null, h("summary", null, "System fields"), h("pre", { class: "code" }, JSON.stringify(Object.fromEntries(Object.entries(rec).filter(([k]) => k.startsWith("_"))), null, 2))) : null,
    ],
    onSubmit: async () => {
      const body = form ? form.read() : parseText();
      const saved = await api<Rec>(rec ? "PATCH" : "POST", rec ? `/${seg(col.name)}/${seg(rec._id)}` : `/${seg(col.name)}`, body);
      toast(rec ? `Record ${saved._id} saved.` : `Record ${saved._id} created.`);
      await reload().catch((e) => showError(e));
    },
  });
}
