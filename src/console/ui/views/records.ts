/** The records browser: filter, sort, search, cursor pages, create/edit as JSON, soft delete, restore, hard delete. */
import { api, seg } from "../api.ts";
import { fmtTime, fmtValue, h, replace } from "../dom.ts";
import { follow } from "../live.ts";
import { badge, busy, button, checkbox, confirmDialog, field, loading, openDialog, parseJsonInput, showError, table, toast } from "../ui.ts";
import { SYSTEM_FIELDS } from "./collection.ts";
import type { CollectionJson } from "./collections.ts";
import { fileCell, fileControl, fileFieldsOf, fileToken } from "./files.ts";
import { loadRelations, manyPicker, onePicker, relationCell, relationsFrom, relationText, type FieldRelations, type LinkedRec } from "./links.ts";

type Rec = LinkedRec & { _deleted_at: number | null };
interface Page {
  items: Rec[];
  next_cursor: string | null;
  total: number | null;
}

const OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "like", "in"];
/** Fields shown when the user has not chosen: more make a 1280 px table scroll sideways. */
const DEFAULT_COLUMNS = 6;

/** The columns chosen for a collection, kept in the browser (null: never chosen). */
function savedColumns(name: string): string[] | null {
  try {
    const v = JSON.parse(localStorage.getItem(`baas.columns.${name}`) ?? "null");
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : null;
  } catch {
    return null;
  }
}

/**
 * Renders the Records tab of a collection; with `focusId`, filtered to that record (where a link to a
 * related record leads).
 */
export async function renderRecords(body: HTMLElement, col: CollectionJson, stale: () => boolean, onChange: () => Promise<void>, focusId?: string): Promise<void> {
  const base = `/${seg(col.name)}`;
  // Relations from this collection: their fields show the related records and get pickers in the form editor.
  const rels = relationsFrom(await loadRelations(), col.name);
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
  if (focusId) {
    addFilter("_id");
    filterRows.querySelector<HTMLInputElement>('input[name="filter-value"]')!.value = focusId;
  }
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
    // The related records come with the page, so their cells show labels, not ids.
    if (rels.size) p.set("expand", [...rels.keys()].join(","));
    return p;
  };

  // The fields a table can show: the collection's, its relation fields, and any a record of the page has.
  const allFields = (items: Rec[]) => {
    const names = new Set([...col.fields.map((f) => f.name), ...rels.keys()]);
    for (const r of items) for (const k of Object.keys(r)) if (!k.startsWith("_")) names.add(k);
    return [...names];
  };
  let chosen = savedColumns(col.name);
  const columnsButton = button("Columns", () => chooseColumns());
  columnsButton.setAttribute("aria-haspopup", "dialog");
  let lastItems: Rec[] = [];
  let redraw = () => {};
  const shownFields = (items: Rec[]) => {
    const all = allFields(items);
    const shown = chosen ? all.filter((f) => chosen!.includes(f)) : all.slice(0, DEFAULT_COLUMNS);
    columnsButton.textContent = shown.length < all.length ? `Columns (${shown.length} of ${all.length})` : "Columns";
    const hidden = all.length - shown.length;
    columnsButton.title = hidden ? `${hidden} ${hidden === 1 ? "field is" : "fields are"} not shown: choose which` : "Choose the fields shown";
    return shown;
  };
  const chooseColumns = () => {
    const all = allFields(lastItems);
    const shown = new Set(shownFields(lastItems));
    const boxes = all.map((f) => ({ f, ...checkbox(rels.has(f) ? `${f} (${relationText(rels.get(f)!)})` : f, shown.has(f), { name: `column-${f}` }) }));
    openDialog({
      title: `Columns of ${col.name}`,
      submitLabel: "Show these",
      body: [
        h("p", { class: "muted" }, "The fields shown in the table (kept in this browser). _id, _updated_at, status and the actions are always shown."),
        h("div", { class: "actions left" }, button("All", () => boxes.forEach((b) => (b.input.checked = true))), button("None", () => boxes.forEach((b) => (b.input.checked = false)))),
        h("div", { class: "grid3 columns-list" }, boxes.map((b) => b.el)),
      ],
      onSubmit: async () => {
        chosen = boxes.filter((b) => b.input.checked).map((b) => b.f);
        localStorage.setItem(`baas.columns.${col.name}`, JSON.stringify(chosen));
        redraw();
      },
    });
  };

  let shownPage = 0;
  // Only the latest load may draw: a live reload answered after a click on "Next" must not put the old page back.
  let loads = 0;
  const load = async (pageIndex: number, opts: { quiet?: boolean } = {}) => {
    const mine = ++loads;
    const p = params();
    const after = cursors[pageIndex];
    if (after) p.set("after", after);
    if (!opts.quiet) replace(results, loading());
    let page: Page;
    try {
      page = await api<Page>("GET", `${base}?${p}`);
    } catch (err) {
      if (mine !== loads) return;
      replace(results, h("p", { class: "empty" }, "Could not load records."));
      throw err;
    }
    // Previews and links of files carry a file token (an <img> cannot send the admin token).
    const token = fileFieldsOf(col).length ? await fileToken().catch(() => null) : null;
    if (stale() || mine !== loads) return;
    shownPage = pageIndex;
    if (page.total !== null) total = page.total;
    cursors = cursors.slice(0, pageIndex + 1);
    if (page.next_cursor) cursors.push(page.next_cursor);
    const reload = async () => {
      await load(pageIndex);
      await afterWrite();
    };
    lastItems = page.items;
    redraw = () => {
      const tableEl = recordTable(col, page.items, shownFields(page.items), rels, reload, token);
      // Columns past the right edge are reached by scrolling the table: say so when it is wider than the page.
      const more = h("p", { class: "scroll-hint muted", hidden: true, "data-scroll-hint": "" }, "Scroll the table sideways for more columns →");
      replace(results, more, tableEl, pager(pageIndex, page));
      // (A few pixels of overflow hide nothing worth a hint.)
      requestAnimationFrame(() => (more.hidden = tableEl.scrollWidth - tableEl.clientWidth < 40));
    };
    redraw();
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
      columnsButton,
      h("span", { class: "spacer" }),
      liveBadge,
      button("New record", () => editRecord(col, null, rels, async () => (await load(0), await afterWrite()))),
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

function recordTable(col: CollectionJson, items: Rec[], shown: string[], rels: FieldRelations, reload: () => Promise<void>, token: string | null): HTMLElement {
  const path = `/${seg(col.name)}`;
  const files = new Set(fileFieldsOf(col).map((f) => f.name));
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
            ? h("span", { class: "cell nullv", title: "empty (null)", "data-null": "" }, "null")
            : files.has(f) && token
              ? fileCell(col.name, r._id, r[f], token)
              : rels.has(f)
              ? relationCell(rels.get(f)!, r[f], r)
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
                button("Edit", () => editRecord(col, r, rels, reload, token)),
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

/**
 * One form control per field, by type; empty means null where the record had the field, else absent. A
 * `one` relation field picks a record of its target, a `many_via` field links several; a `many` field is
 * set from the other side and only shown. `expanded` holds the related records the list embedded.
 */
function recordForm(
  col: CollectionJson,
  data: Record<string, unknown>,
  rels: FieldRelations,
  expanded: Record<string, unknown> = {},
  files: { id: string | null; token: string | null } = { id: null, token: null },
): { el: HTMLElement; read(): Record<string, unknown>; parts(): [string, Blob | string, string?][] } {
  const types = new Map(col.fields.map((f) => [f.name, f.type]));
  const fileDefs = new Map(fileFieldsOf(col).map((f) => [f.name, f]));
  const fileParts: (() => [string, Blob | string, string?][])[] = [];
  for (const [name, r] of rels) if (!types.has(name)) types.set(name, r.type === "one" ? "text" : "json");
  for (const k of Object.keys(data)) if (!types.has(k)) types.set(k, typeof data[k] === "string" ? "text" : typeof data[k] === "number" ? "number" : typeof data[k] === "boolean" ? "boolean" : "json");
  const readers: [string, FieldReader][] = [];
  const rows = [...types].map(([name, type]) => {
    const v = data[name];
    const had = name in data;
    const empty = () => (had ? { present: true, value: null } : { present: false });
    const label = `${name} (${type})`;
    const rel = rels.get(name);
    const fileDef = fileDefs.get(name);
    if (fileDef) {
      // Files: uploaded and removed through a multipart body (the JSON value is left out).
      const control = fileControl(col.name, files.id, fileDef, v, files.token);
      fileParts.push(() => control.parts());
      return control.el;
    }
    if (rel?.type === "many") {
      const n = Array.isArray(v) ? v.length : 0;
      return field(`${name} (${relationText(rel)})`, h("p", { class: "muted", "data-many-readonly": name }, `${n} linked: set by the "${rel.to_field}" field of each ${rel.to_col} record.`));
    }
    if (rel?.type === "many_via") {
      const picker = manyPicker(rel, Array.isArray(v) ? v.map(String) : [], expanded[name]);
      readers.push([name, () => ({ present: true, value: picker.read() })]);
      return field(`${name} (${relationText(rel)})`, picker.el);
    }
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
    if (rel?.type === "one") {
      readers.push([name, () => (input.value.trim() === "" ? empty() : { present: true, value: input.value.trim() })]);
      const el = field(`${name} (${relationText(rel)}: its _id)`, input);
      el.append(onePicker(rel, input, expanded[name]));
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
    parts: () => fileParts.flatMap((p) => p()),
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

/** The create/edit dialog: the record's user fields as JSON, or as a form with one control per field. */
function editRecord(col: CollectionJson, rec: Rec | null, rels: FieldRelations, reload: () => Promise<void>, token: string | null = null): void {
  // A `many` field is set from the other side: it is not sent back.
  const data = rec ? Object.fromEntries(Object.entries(rec).filter(([k]) => !k.startsWith("_") && rels.get(k)?.type !== "many")) : {};
  const text = h("textarea", { name: "record", rows: 14, spellcheck: "false", class: "code" });
  text.value = JSON.stringify(data, null, 2);
  const jsonPane = field("Fields (JSON object)", text, "System fields (_id, _created_at, …) are set by the server. A new field name adds a field; its first value fixes its type.");
  const formPane = h("div", { hidden: true });
  const manyFields = rec ? Object.fromEntries([...rels].filter(([, r]) => r.type === "many").map(([k]) => [k, rec[k]])) : {};
  const fileValues = rec ? Object.fromEntries(fileFieldsOf(col).map((f) => [f.name, rec[f.name]])) : {};
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
        form = recordForm(col, { ...parseText(), ...manyFields, ...fileValues }, rels, rec?._expand, { id: rec?._id ?? null, token });
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
      rec ? h("details", null, h("summary", null, "System fields"), h("pre", { class: "code" }, JSON.stringify(Object.fromEntries(Object.entries(rec).filter(([k]) => k.startsWith("_") && k !== "_expand")), null, 2))) : null,
    ],
    onSubmit: async () => {
      const fields = form ? form.read() : parseText();
      const parts = form ? form.parts() : [];
      let body: unknown = fields;
      if (parts.length) {
        // Files: one multipart body, text fields as they are and other values as JSON.
        const fd = new FormData();
        const types = new Map(col.fields.map((f) => [f.name, f.type]));
        // (A text field's null cannot be said in a form field: left out, as unchanged.)
        for (const [k, v] of Object.entries(fields))
          if (types.get(k) !== "file" && !(v === null && types.get(k) === "text")) fd.append(k, typeof v === "string" && types.get(k) === "text" ? v : JSON.stringify(v));
        for (const [k, v, filename] of parts) if (typeof v === "string") fd.append(k, v);
        else fd.append(k, v, filename ?? "file");
        body = fd;
      }
      const saved = await api<Rec>(rec ? "PATCH" : "POST", rec ? `/${seg(col.name)}/${seg(rec._id)}` : `/${seg(col.name)}`, body);
      toast(rec ? `Record ${saved._id} saved.` : `Record ${saved._id} created.`);
      await reload().catch((e) => showError(e));
    },
  });
}
