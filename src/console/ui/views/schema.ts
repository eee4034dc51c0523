/** The schema as one file: export it (download or copy), import one (preview its plan with a dry run, then apply). */
import { api } from "../api.ts";
import { h, replace } from "../dom.ts";
import { busy, button, checkbox, confirmDialog, field, parseJsonInput, table, toast } from "../ui.ts";

interface Change {
  action: string;
  target: string;
  detail: string;
}
interface Plan {
  changes: Change[];
  applied: boolean;
}

function planTable(plan: Plan): HTMLElement {
  return table(
    ["Action", "Target", "Detail"],
    plan.changes.map((c) => [h("code", { class: c.action.startsWith("drop_") ? "drop" : null }, c.action), h("code", null, c.target), c.detail]),
    { empty: "No changes: the database matches the file." },
  );
}

/** Renders `#/schema`. */
export async function renderSchemaPage(main: HTMLElement, stale: () => boolean): Promise<void> {
  const current = await api<unknown>("GET", "/admin/schema");
  if (stale()) return;
  const text = JSON.stringify(current, null, 2);
  const download = button(
    "Download schema.json",
    () => {
      const url = URL.createObjectURL(new Blob([text + "\n"], { type: "application/json" }));
      const a = h("a", { href: url, download: "schema.json" });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    },
    { kind: "primary" },
  );
  const input = h("textarea", { class: "code", name: "schema", rows: 14, spellcheck: "false", placeholder: '{ "collections": [...], "relations": [...] }' });
  const file = h("input", { type: "file", accept: "application/json,.json", name: "file" });
  file.addEventListener("change", () => {
    const f = file.files?.[0];
    if (f) void f.text().then((t) => (input.value = t));
  });
  const prune = checkbox("Prune: also drop the collections, fields, indexes and relations the file lacks (their data is lost)", false, { name: "prune" });
  const result = h("div", { class: "plan", "aria-live": "polite" });
  const send = (dryRun: boolean) => api<Plan>("POST", "/admin/schema/apply", { schema: parseJsonInput(input.value, "the schema"), dry_run: dryRun, prune: prune.input.checked });
  const preview = button("Preview changes", (ev) =>
    void busy(ev.currentTarget as HTMLButtonElement, async () => {
      const plan = await send(true);
      replace(result, h("h3", null, "Plan (dry run: nothing was changed)"), planTable(plan));
    }),
  );
  const apply = button(
    "Apply",
    (ev) =>
      void busy(ev.currentTarget as HTMLButtonElement, async () => {
        const plan = await send(true);
        if (!plan.changes.length) {
          replace(result, planTable(plan));
          return;
        }
        const drops = plan.changes.filter((c) => c.action.startsWith("drop_"));
        const ok = await confirmDialog(
          `Apply ${plan.changes.length} change${plan.changes.length === 1 ? "" : "s"}?`,
          [
            drops.length ? h("strong", null, `${drops.length} of them drop data or schema: ${drops.map((d) => d.target).join(", ")}. `) : null,
            "All are made in one transaction, or none.",
          ],
          { confirmLabel: "Apply" },
        );
        if (!ok) return;
        const done = await send(false);
        toast(`Applied ${done.changes.length} change${done.changes.length === 1 ? "" : "s"}.`);
        await renderSchemaPage(main, stale);
        replace(main.querySelector(".plan") ?? result, h("h3", null, "Applied"), planTable(done));
      }),
    { kind: "primary" },
  );
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Schema")),
    h(
      "div",
      { class: "card" },
      h("h2", null, "Export"),
      h("p", { class: "muted" }, "Every collection (fields, rules, field rules, indexes, full text) and relation, as the file that baas schema apply and the import below take. Keep it in version control; CI applies it to each server."),
      h("pre", { class: "schema-json", "aria-label": "Current schema" }, text),
      h("div", { class: "actions left" }, download),
    ),
    h(
      "div",
      { class: "card" },
      h("h2", null, "Import"),
      h("p", { class: "muted" }, 'Make the database match a schema file: what is missing is created, what differs is changed (a field with "renamed_from" is renamed; a new type converts every value or nothing changes), what the file lacks is dropped only with Prune.'),
      field("Schema file", file),
      field("Or paste it", input),
      prune.el,
      h("div", { class: "actions left" }, preview, apply),
      result,
    ),
  );
}
