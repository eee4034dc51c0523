/** The access-rule picker: public, authenticated, owner, disabled, a role, or an expression (checked as one types). */
import { api, ApiError, seg } from "../api.ts";
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
/** Expressions to start from, per operation (picked from the input's suggestions). */
export const RULE_EXAMPLES: Record<string, string[]> = {
  read: [
    "status = 'published' || _owner_id = @auth.id",
    "_owner_id = @auth.id || @auth.roles ?= 'editor'",
    "@exists(members, room = @record.room && user = @auth.id)",
    "_owner_id = @auth.id || editors ?= @auth.id",
    "active = true || @auth.roles ?= 'staff'",
  ],
  create: ["@request.body.status = 'draft' || @auth.roles ?= 'editor'", "@auth.verified = true", "!@request.body.owner:isset", "@exists(members, room = @request.body.room && user = @auth.id)"],
  update: ["_owner_id = @auth.id || @auth.roles ?= 'editor'", "_owner_id = @auth.id && !@request.body.status:isset", "room.owner = @auth.id"],
  delete: ["_owner_id = @auth.id", "_owner_id = @auth.id || @auth.roles ?= 'admin'", "@auth.roles ?= 'staff'"],
};

/** How long typing pauses before the expression is checked by the server. */
const CHECK_DELAY_MS = 250;

/**
 * Checks an expression with the server's parser (`POST …/rules/check`, nothing is set) and shows the answer under
 * it: "valid", or the message naming the token and its position. Only the latest answer is shown.
 */
function liveCheck(collection: string, op: string, input: HTMLInputElement, out: HTMLElement): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let asked = 0;
  const show = (ok: boolean, text: string) => {
    out.textContent = text;
    out.className = `hint rule-check ${ok ? "ok" : "error"}`;
    input.setAttribute("aria-invalid", ok ? "false" : "true");
  };
  const check = async () => {
    const rule = input.value;
    const n = ++asked;
    if (!rule.trim()) return show(false, "an expression is required");
    try {
      await api("POST", `/admin/collections/${seg(collection)}/rules/check`, { op, rule });
      if (n === asked) show(true, "valid");
    } catch (err) {
      if (n === asked) show(false, err instanceof ApiError ? err.message : String(err));
    }
  };
  return () => {
    clearTimeout(timer);
    timer = setTimeout(() => void check(), CHECK_DELAY_MS);
  };
}

export function ruleInput(op: string, value: RuleValue, collection?: string): { el: HTMLElement; get(): RuleValue } {
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
  const examples = uid("rule-examples");
  const expression = h("input", {
    type: "text",
    name: `expression-${op}`,
    list: examples,
    autocomplete: "off",
    placeholder: "status = 'published' || _owner_id = @auth.id",
    "aria-label": `${op} rule expression`,
    value: kind === "expression" ? String(value) : "",
    class: "rule-expression",
  });
  const datalist = h("datalist", { id: examples }, (RULE_EXAMPLES[op] ?? []).map((x) => h("option", { value: x })));
  // The server's answer for the expression as typed (a collection being made has none to check against yet).
  const verdict = h("div", { class: "hint rule-check", role: "status", "aria-live": "polite", "data-rule-check": op });
  const recheck = collection ? liveCheck(collection, op, expression as HTMLInputElement, verdict) : null;
  if (recheck) expression.addEventListener("input", recheck);
  const sync = () => {
    role.hidden = select.value !== "role";
    expression.hidden = select.value !== "expression";
    verdict.hidden = select.value !== "expression" || !recheck;
    if (!verdict.hidden && recheck) recheck();
  };
  select.addEventListener("change", () => {
    sync();
    if (select.value === "role") role.focus();
    if (select.value === "expression") expression.focus();
  });
  sync();
  return {
    el: h("div", { class: "field rule" }, h("label", { for: id }, op), h("div", { class: "inline" }, select, role, expression, datalist), verdict),
    get: () => (select.value === "role" ? { role: role.value.trim() } : select.value === "expression" ? expression.value : select.value),
  };
}
