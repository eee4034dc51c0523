/** The collections list: record counts, last writes, rules; create a collection. */
import { api, seg } from "../api.ts";
import { fmtTime, h, replace } from "../dom.ts";
import { button, field, openDialog, showError, table } from "../ui.ts";
import { DEFAULT_RULES, OPERATIONS, ruleInput, ruleText } from "./rules.ts";

export interface CollectionJson {
  name: string;
  rules: Record<string, string | { role: string }>;
  field_rules: Record<string, unknown>[];
  fields: { name: string; type: string }[];
  indexes: { name: string; fields: string[]; unique: boolean }[];
  fts: { enabled: boolean; fields: string[] };
  created_at: number;
  updated_at: number;
}
export interface Stats {
  row_count: number;
  last_write: number | null;
}

/** Renders `#/collections`. */
export async function renderCollections(main: HTMLElement, stale: () => boolean): Promise<void> {
  const { items } = await api<{ items: CollectionJson[] }>("GET", "/admin/collections");
  const stats = await Promise.all(
    items.map((c) =>
      api<Stats>("GET", `/admin/collections/${seg(c.name)}/stats`).catch((err) => {
        showError(err);
        return null;
      }),
    ),
  );
  if (stale()) return;
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Collections"), button("New collection", () => openCreateCollection(), { kind: "primary" })),
    table(
      ["Name", "Records", "Last write", "Fields", ...OPERATIONS.map((o) => o[0].toUpperCase() + o.slice(1))],
      items.map((c, i) => [
        h("a", { href: `#/collections/${seg(c.name)}` }, c.name),
        h("span", { class: "num", "data-count": c.name }, stats[i] ? String(stats[i]!.row_count) : "—"),
        fmtTime(stats[i]?.last_write),
        String(c.fields.length),
        ...OPERATIONS.map((o) => h("code", null, ruleText(c.rules[o]))),
      ]),
      { empty: "No collections yet. Create one to start storing records." },
    ),
  );
}

/** The "New collection" dialog; opens the new collection on success. */
export function openCreateCollection(): void {
  const name = h("input", { type: "text", name: "name", required: true, autocomplete: "off", spellcheck: "false", pattern: "[A-Za-z][A-Za-z0-9_]{0,63}" });
  const rules = OPERATIONS.map((op) => ({ op, ...ruleInput(op, DEFAULT_RULES[op]) }));
  openDialog({
    title: "New collection",
    submitLabel: "Create",
    body: [
      field("Name", name, "A letter, then letters, digits or _ (at most 64)."),
      h("fieldset", null, h("legend", null, "Access rules"), h("div", { class: "grid4" }, rules.map((r) => r.el))),
    ],
    onSubmit: async () => {
      const body = { name: name.value.trim(), rules: Object.fromEntries(rules.map((r) => [r.op, r.get()])) };
      const col = await api<CollectionJson>("POST", "/admin/collections", body);
      location.hash = `#/collections/${seg(col.name)}`;
    },
  });
}
