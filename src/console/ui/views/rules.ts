/** The access-rule picker: public, authenticated, owner, disabled or a role. */
import { h, uid } from "../dom.ts";

export type RuleValue = string | { role: string };
export const OPERATIONS = ["read", "create", "update", "delete"] as const;
export const DEFAULT_RULES: Record<string, RuleValue> = { read: "public", create: "authenticated", update: "owner", delete: "owner" };
const KINDS = ["public", "authenticated", "owner", "disabled", "role"];

/** A rule as short text: `public`, `role:editor`. */
export function ruleText(r: RuleValue | undefined): string {
  if (r && typeof r === "object") return `role:${r.role}`;
  return String(r ?? "—");
}

/** A select plus, for `role`, a role-name input. `get()` returns the rule value. */
export function ruleInput(op: string, value: RuleValue): { el: HTMLElement; get(): RuleValue } {
  const isRole = typeof value === "object" && value !== null;
  const id = uid("rule");
  const select = h(
    "select",
    { id, name: `rule-${op}`, "data-rule": op },
    KINDS.map((k) => h("option", { value: k, selected: isRole ? k === "role" : k === value }, k)),
  );
  const role = h("input", {
    type: "text",
    name: `role-${op}`,
    placeholder: "role name",
    "aria-label": `${op} role name`,
    value: isRole ? (value as { role: string }).role : "",
    class: "role-name",
  });
  const sync = () => (role.hidden = select.value !== "role");
  select.addEventListener("change", () => {
    sync();
    if (select.value === "role") role.focus();
  });
  sync();
  return {
    el: h("div", { class: "field rule" }, h("label", { for: id }, op), h("div", { class: "inline" }, select, role)),
    get: () => (select.value === "role" ? { role: role.value.trim() } : select.value),
  };
}
