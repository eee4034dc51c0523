/** Relation fields in the console: their records shown by a title-like field, linked, and picked from a search. */
import { api, seg } from "../api.ts";
import { fmtValue, h, replace } from "../dom.ts";
import { button, showError } from "../ui.ts";
import type { CollectionJson } from "./collections.ts";

export interface RelationJson {
  id: string;
  from_col: string;
  from_field: string;
  to_col: string;
  to_field: string | null;
  type: "one" | "many" | "many_via";
}

/** The relations from one collection, by field name. */
export type FieldRelations = Map<string, RelationJson>;

/** A record as the data API returns it, with `_expand` when asked for. */
export type LinkedRec = Record<string, unknown> & { _id: string; _expand?: Record<string, unknown> };

/** Every relation, for the collections that need them (an error leaves the console without links, not broken). */
export async function loadRelations(): Promise<RelationJson[]> {
  return (await api<{ items: RelationJson[] }>("GET", "/admin/relations").catch(() => ({ items: [] }))).items;
}

/** The relations whose `from_col` is `col`, by field. */
export function relationsFrom(all: RelationJson[], col: string): FieldRelations {
  return new Map(all.filter((r) => r.from_col.toLowerCase() === col.toLowerCase()).map((r) => [r.from_field, r]));
}

/** What a relation field is, for people: `one → authors`, `many_via → tags`, `many → posts (by author)`. */
export function relationText(r: RelationJson): string {
  return `${r.type} → ${r.to_col}${r.type === "many" && r.to_field ? ` (by ${r.to_field})` : ""}`;
}

// Field names that usually say what a record is, best first.
const TITLE_FIELDS = ["title", "name", "label", "display_name", "displayname", "username", "email", "subject", "slug", "code"];

/** The label of a record: a title-like field, else its first non-empty text value, else its id. */
export function recordLabel(r: Record<string, unknown> & { _id: string }): string {
  const entries = Object.entries(r).filter(([k, v]) => !k.startsWith("_") && typeof v === "string" && v.trim());
  for (const name of TITLE_FIELDS) {
    const hit = entries.find(([k]) => k.toLowerCase() === name);
    if (hit) return fmtValue(hit[1], 60);
  }
  return entries.length ? fmtValue(entries[0]![1], 60) : r._id;
}

/** Where the console shows one record: its collection's records, filtered to it. */
export function recordHref(col: string, id: string): string {
  return `#/collections/${seg(col)}/records/${seg(id)}`;
}

/**
 * A related record, labelled by its title-like field (the id when it is hidden or missing): a link to it,
 * or (in a dialog, which a navigation would leave behind) its name alone.
 */
export function recordLink(col: string, id: string, target: unknown, opts: { link?: boolean } = {}): HTMLElement {
  const t = target && typeof target === "object" ? (target as LinkedRec) : null;
  const attrs = { class: `rel-link${t ? "" : " missing"}`, title: t ? `${col} ${id}` : `${col} ${id} (not readable or not found)`, "data-rel-id": id };
  return opts.link === false ? h("span", attrs, t ? recordLabel(t) : id) : h("a", { ...attrs, href: recordHref(col, id) }, t ? recordLabel(t) : id);
}

/** Shown at most per cell of a `many`/`many_via` field: the rest is a count. */
const CELL_LINKS = 3;

/** A table cell of a relation field: links to the related records. */
export function relationCell(rel: RelationJson, value: unknown, record: LinkedRec): HTMLElement {
  const expanded = record._expand?.[rel.from_field];
  if (rel.type === "one") return h("span", { class: "cell" }, recordLink(rel.to_col, String(value), expanded));
  const ids = Array.isArray(value) ? value.map(String) : [];
  if (!ids.length) return h("span", { class: "cell muted" }, "none");
  const byId = new Map((Array.isArray(expanded) ? (expanded as LinkedRec[]) : []).map((t) => [t._id, t]));
  const shown = ids.slice(0, CELL_LINKS).map((id) => recordLink(rel.to_col, id, byId.get(id)));
  const more = ids.length - shown.length;
  return h("span", { class: "cell rel-list" }, shown.flatMap((a, i) => (i ? [", ", a] : [a])), more > 0 ? h("span", { class: "muted" }, ` +${more}`) : null);
}

/** The records of `target` that match what was typed: its full-text index when it has one, else `like` on its first text field. */
async function searchRecords(target: string, typed: string): Promise<LinkedRec[]> {
  const tcol = await api<CollectionJson>("GET", `/admin/collections/${seg(target)}`);
  const p = new URLSearchParams({ limit: "8" });
  const q = typed.trim();
  if (q && tcol.fts.enabled) p.set("search", q);
  else if (q) {
    const names = tcol.fields.filter((f) => f.type === "text").map((f) => f.name);
    const text = TITLE_FIELDS.map((n) => names.find((f) => f.toLowerCase() === n)).find(Boolean) ?? names[0];
    p.append("filter", text ? `${text}:like:${q}` : `_id:eq:${q}`);
  }
  return (await api<{ items: LinkedRec[] }>("GET", `/${seg(target)}?${p}`)).items;
}

/** A search box over `target` whose results are buttons; `onPick` gets the chosen record. */
function searchBox(name: string, target: string, onPick: (r: LinkedRec) => void): HTMLElement {
  const query = h("input", { type: "search", name: `pick-${name}`, placeholder: `search ${target}`, "aria-label": `Search ${target} for ${name}` });
  const results = h("div", { class: "picker-results", "data-picker": name });
  let seq = 0;
  const find = async () => {
    const mine = ++seq;
    const items = await searchRecords(target, query.value);
    if (mine !== seq) return;
    replace(
      results,
      items.length
        ? items.map((r) => button([recordLabel(r), " ", h("code", { class: "id" }, r._id)], () => onPick(r), { kind: "subtle", title: `Use ${r._id}` }))
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

/** The editor of a `one` field: the record it names (linked, by label) and a search to pick another. */
export function onePicker(rel: RelationJson, input: HTMLInputElement, current: unknown): HTMLElement {
  const now = h("div", { class: "picked", "data-picked": rel.from_field });
  const show = (id: string, target: unknown) =>
    replace(now, id ? ["Now: ", recordLink(rel.to_col, id, target, { link: false }), " ", button("Clear", () => ((input.value = ""), show("", null)), { kind: "subtle", title: `Set ${rel.from_field} to null` })] : h("span", { class: "muted" }, "None (null)."));
  show(input.value.trim(), current);
  input.addEventListener("change", () => show(input.value.trim(), null));
  return h("div", null, now, searchBox(rel.from_field, rel.to_col, (r) => ((input.value = r._id), show(r._id, r))));
}

/**
 * The editor of a `many_via` field: the linked records as removable chips, and a search that adds one.
 * `read()` gives the ids in order.
 */
export function manyPicker(rel: RelationJson, ids: string[], linked: unknown): { el: HTMLElement; read(): string[] } {
  const known = new Map((Array.isArray(linked) ? (linked as LinkedRec[]) : []).map((t) => [t._id, t as unknown]));
  let chosen = [...ids];
  const chips = h("div", { class: "chips", "data-many": rel.from_field });
  const draw = () =>
    replace(
      chips,
      chosen.length
        ? chosen.map((id) =>
            h(
              "span",
              { class: "chip" },
              recordLink(rel.to_col, id, known.get(id), { link: false }),
              h("button", { type: "button", class: "chip-x", "aria-label": `Remove ${id}`, title: "Remove", onclick: () => ((chosen = chosen.filter((c) => c !== id)), draw()) }, "×"),
            ),
          )
        : h("span", { class: "muted" }, "None linked."),
    );
  draw();
  const add = searchBox(rel.from_field, rel.to_col, (r) => {
    known.set(r._id, r);
    if (!chosen.includes(r._id)) chosen.push(r._id);
    draw();
  });
  return { el: h("div", { class: "many-picker" }, chips, add), read: () => [...chosen] };
}
