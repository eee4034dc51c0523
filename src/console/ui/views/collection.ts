/** One collection: records, access rules, field rules, indexes, full-text search, schema and stats. */
import { api, seg } from "../api.ts";
import { fmtTime, h, replace } from "../dom.ts";
import { badge, busy, button, checkbox, confirmDialog, field, loading, parseJsonInput, showError, table, toast } from "../ui.ts";
import type { CollectionJson, Stats } from "./collections.ts";
import { renderFields, SYSTEM_FIELDS } from "./fields.ts";
import { loadRelations, relationsFrom } from "./links.ts";
import { renderRecords } from "./records.ts";
import { OPERATIONS, ruleInput } from "./rules.ts";

const TABS: [string, string][] = [
  ["records", "Records"],
  ["rules", "Access rules"],
  ["field-rules", "Field rules"],
  ["indexes", "Indexes"],
  ["search", "Full-text search"],
  ["schema", "Fields & stats"],
];

export { SYSTEM_FIELDS };

/** Renders `#/collections/:name/:tab` (`#/collections/:name/records/:id`: the records tab filtered to one record). */
export async function renderCollection(main: HTMLElement, name: string, tab: string, stale: () => boolean, focusId?: string): Promise<void> {
  const [col, stats] = await Promise.all([
    api<CollectionJson>("GET", `/admin/collections/${seg(name)}`),
    api<Stats>("GET", `/admin/collections/${seg(name)}/stats`).catch((err) => (showError(err), null)),
  ]);
  if (stale()) return;
  const base = `#/collections/${seg(name)}`;
  const rowCount = h("strong", { "data-stat": "row_count" }, stats ? String(stats.row_count) : "—");
  const rowWord = h("span", null, stats?.row_count === 1 ? " record" : " records");
  const lastWrite = h("strong", null, fmtTime(stats?.last_write));
  // Record changes refresh the counters in the heading.
  const refreshStats = async () => {
    const st = await api<Stats>("GET", `/admin/collections/${seg(name)}/stats`);
    rowCount.textContent = String(st.row_count);
    rowWord.textContent = st.row_count === 1 ? " record" : " records";
    lastWrite.textContent = fmtTime(st.last_write);
  };
  const body = h("section", { class: "tab-body", id: "tab-body" });
  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/collections" }, "Collections"), " / "),
    h(
      "div",
      { class: "page-head" },
      h("h1", null, col.name),
      h(
        "div",
        { class: "head-stats" },
        h("span", { "data-stat": "records" }, rowCount, rowWord),
        h("span", null, "last write ", lastWrite),
        button("Delete collection", (ev) => void deleteCollection(ev.currentTarget as HTMLButtonElement, col.name), { kind: "danger" }),
      ),
    ),
    h(
      "nav",
      { class: "tabs", "aria-label": "Collection sections" },
      TABS.map(([id, label]) => h("a", { href: `${base}/${id}`, "aria-current": id === tab ? "page" : null }, label)),
    ),
    body,
  );
  body.append(loading());
  const views: Record<string, () => Promise<void> | void> = {
    records: () => renderRecords(body, col, stale, refreshStats, focusId),
    rules: () => renderRules(body, col),
    "field-rules": () => renderFieldRules(body, col),
    indexes: () => renderIndexes(body, col, stale),
    search: () => renderFts(body, col, stale),
    schema: async () => renderFields(body, col, stats, relationsFrom(await loadRelations(), col.name), () => void renderCollection(main, name, tab, stale).catch((err) => showError(err))),
  };
  await (views[tab] ?? views.records)();
}

async function deleteCollection(btn: HTMLButtonElement, name: string): Promise<void> {
  const ok = await confirmDialog(
    `Delete collection ${name}?`,
    "This drops its table with every record, its indexes, full-text index and relations. It cannot be undone.",
    { typeToConfirm: name, confirmLabel: "Delete collection" },
  );
  if (!ok) return;
  await busy(btn, async () => {
    await api("DELETE", `/admin/collections/${seg(name)}`);
    toast(`Collection ${name} deleted.`);
    location.hash = "#/collections";
  });
}

function renderRules(body: HTMLElement, col: CollectionJson): void {
  const inputs = OPERATIONS.map((op) => ({ op, ...ruleInput(op, col.rules[op], col.name) }));
  const save = h("button", { type: "submit", class: "btn primary" }, "Save rules");
  replace(
    body,
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(save, async () => {
            const rules = Object.fromEntries(inputs.map((i) => [i.op, i.get()]));
            const res = await api<CollectionJson>("PUT", `/admin/collections/${seg(col.name)}/rules`, { rules });
            Object.assign(col, res);
            toast("Access rules saved.");
          });
        },
      },
      h("h2", null, "Access rules"),
      h(
        "p",
        { class: "muted" },
        "Who may do what on the data API. public: anyone; authenticated: any signed-in user; owner: the record's creator; disabled: nobody; role: users with that role; expression: a condition on the record and the caller (pick an example to start from; it is checked as you type). Admin credentials pass every rule.",
      ),
      h("div", { class: "grid4" }, inputs.map((i) => i.el)),
      h("div", { class: "actions" }, save),
    ),
  );
}

interface FieldRuleRow {
  el: HTMLElement;
  get(): Record<string, unknown>;
}

function fieldRuleRow(rule: Record<string, unknown>, onRemove: (row: FieldRuleRow) => void): FieldRuleRow {
  const name = h("input", { type: "text", name: "field", list: "known-fields", value: String(rule.field ?? ""), "aria-label": "Field", required: true });
  const required = h("input", { type: "checkbox", name: "required", checked: rule.required === true, "aria-label": "Required" });
  const num = (k: string) =>
    h("input", { type: "number", step: "any", name: k, value: typeof rule[k] === "number" ? String(rule[k]) : "", "aria-label": k, class: "narrow" });
  const min = num("min");
  const max = num("max");
  const regex = h("input", { type: "text", name: "regex", value: typeof rule.regex === "string" ? rule.regex : "", "aria-label": "Regex", spellcheck: "false", placeholder: "^[A-Z]+$" });
  const en = h("input", {
    type: "text",
    name: "enum",
    value: Array.isArray(rule.enum) ? JSON.stringify(rule.enum) : "",
    "aria-label": "Enum (JSON array)",
    spellcheck: "false",
    placeholder: '["draft", "published"]',
  });
  const row: FieldRuleRow = {
    el: h(
      "tr",
      { class: "field-rule" },
      h("td", null, name),
      h("td", { class: "center" }, required),
      h("td", null, min),
      h("td", null, max),
      h("td", null, regex),
      h("td", null, en),
      h("td", null, button("Remove", () => onRemove(row), { title: "Remove this rule" })),
    ),
    get() {
      const out: Record<string, unknown> = { field: name.value.trim() };
      if (required.checked) out.required = true;
      if (min.value !== "") out.min = Number(min.value);
      if (max.value !== "") out.max = Number(max.value);
      if (regex.value !== "") out.regex = regex.value;
      if (en.value.trim() !== "") out.enum = parseJsonInput(en.value, `enum of "${out.field}"`);
      return out;
    },
  };
  return row;
}

function renderFieldRules(body: HTMLElement, col: CollectionJson): void {
  const names = col.fields.map((f) => f.name);
  const tbody = h("tbody");
  const rows: FieldRuleRow[] = [];
  const add = (rule: Record<string, unknown>) => {
    const row = fieldRuleRow(rule, (r) => {
      rows.splice(rows.indexOf(r), 1);
      r.el.remove();
    });
    rows.push(row);
    tbody.append(row.el);
    return row;
  };
  for (const r of col.field_rules) add(r);
  const save = h("button", { type: "submit", class: "btn primary" }, "Save field rules");
  replace(
    body,
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(save, async () => {
            const field_rules = rows.map((r) => r.get());
            const res = await api<CollectionJson>("PUT", `/admin/collections/${seg(col.name)}/rules`, { field_rules });
            Object.assign(col, res);
            toast("Field rules saved.");
          });
        },
      },
      h("h2", null, "Field rules"),
      h(
        "p",
        { class: "muted" },
        "Checked on create and update. min/max bound numbers, string lengths and array sizes; regex applies to strings (RE2 syntax: no backreferences or lookaround; values up to 10,000 characters); enum lists the allowed values as a JSON array.",
      ),
      h("datalist", { id: "known-fields" }, names.map((n) => h("option", { value: n }))),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "edit-table" },
          h("thead", null, h("tr", null, ["Field", "Required", "Min", "Max", "Regex", "Enum", ""].map((t) => h("th", { scope: "col" }, t)))),
          tbody,
        ),
      ),
      h(
        "div",
        { class: "actions" },
        button("Add field rule", () => add({}).el.querySelector("input")?.focus()),
        save,
      ),
    ),
  );
}

async function renderIndexes(body: HTMLElement, col: CollectionJson, stale: () => boolean): Promise<void> {
  const path = `/admin/collections/${seg(col.name)}/indexes`;
  const { items } = await api<{ items: { name: string; fields: string[]; unique: boolean }[] }>("GET", path);
  if (stale()) return;
  const fields = h("input", { type: "text", name: "fields", required: true, placeholder: "status, _created_at", spellcheck: "false" });
  const unique = checkbox("Unique", false, { name: "unique" });
  const create = h("button", { type: "submit", class: "btn primary" }, "Create index");
  const reload = () => renderIndexes(body, col, stale).catch((e) => showError(e));
  replace(
    body,
    h(
      "div",
      { class: "card" },
      h("h2", null, "Indexes"),
      table(
        ["Name", "Fields", "Unique", ""],
        items.map((ix) => [
          h("code", null, ix.name),
          ix.fields.join(", "),
          ix.unique ? badge("unique", "info") : "",
          button(
            "Drop",
            async (ev) => {
              const btn = ev.currentTarget as HTMLButtonElement;
              if (!(await confirmDialog(`Drop index ${ix.name}?`, "Queries on these fields may become slower.", { confirmLabel: "Drop index" }))) return;
              await busy(btn, async () => {
                await api("DELETE", `${path}/${seg(ix.name)}`);
                toast(`Index ${ix.name} dropped.`);
                await reload();
              });
            },
            { kind: "danger" },
          ),
        ]),
        { empty: "No indexes." },
      ),
    ),
    h(
      "form",
      {
        class: "card",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void busy(create, async () => {
            const list = fields.value.split(",").map((s) => s.trim()).filter(Boolean);
            const ix = await api<{ name: string }>("POST", path, { fields: list, unique: unique.input.checked });
            toast(`Index ${ix.name} created.`);
            await reload();
          });
        },
      },
      h("h2", null, "New index"),
      h("div", { class: "inline-form" }, field("Fields (comma-separated, in order)", fields, `Known: ${[...col.fields.map((f) => f.name), ...SYSTEM_FIELDS].join(", ")}`), unique.el, create),
    ),
  );
}

interface FtsStatus {
  enabled: boolean;
  fields?: string[];
  indexed_records?: number;
  state?: "disabled" | "building" | "ready";
}

async function renderFts(body: HTMLElement, col: CollectionJson, stale: () => boolean): Promise<void> {
  const path = `/admin/collections/${seg(col.name)}/fts`;
  const st = await api<FtsStatus>("GET", path);
  if (stale()) return;
  const building = st.state === "building";
  const indexed = h("dd", { "data-fts-indexed": "" }, st.indexed_records === undefined ? "—" : String(st.indexed_records));
  // While a large collection is indexed, the count is read again every second until the index is ready.
  const watch = (onReady?: () => void) => {
    const timer = setInterval(() => {
      if (stale() || !indexed.isConnected) return clearInterval(timer);
      void api<FtsStatus>("GET", path).then((now) => {
        indexed.textContent = String(now.indexed_records ?? 0);
        if (now.state === "building") return;
        clearInterval(timer);
        onReady?.();
      }, () => clearInterval(timer));
    }, 1000);
    return timer;
  };
  if (building) watch(() => void renderFts(body, col, stale));
  const toggle = button(
    st.enabled ? "Disable full-text search" : "Enable full-text search",
    (ev) =>
      void busy(ev.currentTarget as HTMLButtonElement, async () => {
        const timer = st.enabled ? undefined : watch();
        try {
          await api(st.enabled ? "DELETE" : "POST", path);
        } finally {
          clearInterval(timer);
        }
        toast(st.enabled ? "Full-text search disabled." : "Full-text search enabled.");
        await renderFts(body, col, stale);
      }),
    { kind: st.enabled ? "danger" : "primary" },
  );
  replace(
    body,
    h(
      "div",
      { class: "card" },
      h("h2", null, "Full-text search"),
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Status"),
        h(
          "dd",
          { "data-fts": st.enabled ? "enabled" : "disabled" },
          st.enabled ? badge("enabled", "ok") : badge("disabled"),
          building ? badge("building: records written before enabling are still being added", "warn") : null,
        ),
        h("dt", null, "Indexed fields"),
        h("dd", null, st.fields?.length ? st.fields.join(", ") : "—"),
        h("dt", null, "Indexed records"),
        indexed,
      ),
      h(
        "p",
        { class: "muted" },
        "When enabled, every text field is indexed (also text fields that appear later), and the data API accepts search=… with prefixes (term*), \"quoted phrases\" and AND/OR/NOT. A large collection is indexed in steps while the server keeps serving; the count grows meanwhile.",
      ),
      h("div", { class: "actions" }, toggle),
    ),
  );
}
