/** The access-rule picker: public, authenticated, owner, disabled, a role, or an expression. */
import { h, uid } from "../dom.ts";

export type RuleValue = string | { role: string };
export const OPERATIONS = ["read", "create", "update", "delete"] as const;
export const DEFAULT_RULES: Record<string, RuleValue> = { read: "public", create: "authenticated", update: "owner", delete: "owner" };
const FIXED = ["public", "authenticated", "owner", "disabled"];
const KINDS = [...FIXED, "role", "expression"];

/** A rule as short text: `public`, `role:editor`. */
export function ruleText(r: RuleValue | undefined): string {
  if (r && typeof r === "object") return `role:${r.role}`;
  return String(r ?? "—");
}

/**
 * A select plus, for `role`, a role-name input and, for `expression`, the expression's text. `get()` returns the
 * rule value. An expression rule shows as itself, so saving the form never replaces it with another kind.
 */
export function ruleInput(op: string, value: RuleValue): { el: HTMLElement; get(): RuleValue } {
  const kind = typeof value === "object" && value !== null ? "role" : FIXED.includes(value) ? value : "expression";
  const id = uid("rule");
  const select = h(
    "select",
    { id, name: `rule-${op}`, "data-rule": op },
    KINDS.map((k) => h("option", { value: k, selected: k === kind }, k)),
  );
  const role = h("input", {
    type: "text",
    name: `role-${op}`,
    placeholder: "role name",
    "aria-label": `${op} role name`,
    value: kind === "role" ? (value as { role: string }).role : "",
    class: "role-name",
  });
  const expression = h("input", {
    type: "text",
    name: `expression-${op}`,
    placeholder: "status = 'published' || _owner_id = @auth.id",
    "aria-label": `${op} rule expression`,
    value: kind === "expression" ? String(value) : "",
    class: "rule-expression",
  });
  const sync = () => {
    role.hidden = select.value !== "role";
    expression.hidden = select.value !== "expression";
  };
  select.addEventListener("change", () => {
    sync();
    if (select.value === "role") role.focus();
    if (select.value === "expression") expression.focus();
  });
  sync();
  return {
    el: h("div", { class: "field rule" }, h("label", { for: id }, op), h("div", { class: "inline" }, select, role, expression)),
    get: () => (select.value === "role" ? { role: role.value.trim() } : select.value === "expression" ? expression.value : select.value),
  };
}
