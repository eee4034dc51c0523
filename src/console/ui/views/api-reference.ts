/** `#/api`: a reference of the HTTP API, read from the server's own OpenAPI document. */
import { api } from "../api.ts";
import { h, replace, type Child } from "../dom.ts";
import { table } from "../ui.ts";

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; description?: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}
interface OpenApi {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

/** A schema as a short name: its component, or its type. */
function schemaName(schema: unknown): string {
  const s = schema as { $ref?: string; type?: string; items?: unknown } | undefined;
  if (!s) return "";
  if (s.$ref) return s.$ref.split("/").pop()!;
  if (s.type === "array") return `${schemaName(s.items)}[]`;
  return s.type ?? "any";
}

/** The document's text with its `code` spans as code elements (its descriptions are Markdown-ish). */
export function withCode(text: string): Child[] {
  return text.split("`").map((part, i) => (i % 2 ? h("code", null, part) : part));
}

/** Who may call: "public", or the credentials it takes. */
function access(op: Operation): string {
  const names = [...new Set((op.security ?? []).flatMap((r) => Object.keys(r)))];
  if (!names.length) return "public";
  return (op.security ?? []).some((r) => !Object.keys(r).length) ? `optional: ${names.join(", ")}` : names.join(", ");
}

function operation(method: string, path: string, op: Operation): HTMLElement {
  const body = op.requestBody ? Object.values(op.requestBody.content)[0]?.schema : undefined;
  const params = (op.parameters ?? []).map((p) => [h("code", null, p.name), ` (${p.in}${p.required ? ", required" : ""})`, p.description ? [": ", withCode(p.description)] : null]);
  const responses = Object.entries(op.responses).map(([status, r]) => {
    const schema = r.content ? Object.values(r.content)[0]?.schema : undefined;
    return h("li", null, h("code", null, status), " ", withCode(r.description), schema ? h("span", { class: "muted" }, ` → ${schemaName(schema)}`) : null);
  });
  return h(
    "details",
    { class: "card api-op" },
    h("summary", null, h("span", { class: "badge info" }, method.toUpperCase()), h("code", null, path), " ", op.summary ?? ""),
    op.description ? h("p", null, withCode(op.description)) : null,
    h("p", { class: "muted" }, `Credentials: ${access(op)}`),
    params.length ? h("ul", null, params.map((p) => h("li", null, p))) : null,
    body ? h("p", null, "Body: ", h("code", null, schemaName(body))) : null,
    h("ul", null, responses),
  );
}

/** Renders `#/api`: every operation by tag, and the document's schemas. */
export async function renderApiReference(main: HTMLElement, stale: () => boolean): Promise<void> {
  const doc = await api<OpenApi>("GET", "/openapi.json");
  if (stale()) return;
  const byTag = new Map<string, HTMLElement[]>();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const tag = op.tags?.[0] ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(operation(method, path, op));
    }
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, `API reference`), h("span", { class: "muted" }, `${doc.info.title} ${doc.info.version}`)),
    h("p", { class: "muted api-intro" }, withCode(doc.info.description ?? ""), " The document itself: ", h("a", { href: "/api/v1/openapi.json" }, "/api/v1/openapi.json"), " (OpenAPI 3.1)."),
    [...byTag].map(([tag, ops]) => h("section", null, h("h2", null, tag), ops)),
    h("h2", null, "Schemas"),
    h(
      "div",
      { class: "card" },
      table(
        ["Name", "JSON Schema"],
        Object.entries(doc.components.schemas).map(([name, schema]) => [h("code", { id: `schema-${name}` }, name), h("pre", { class: "code" }, JSON.stringify(schema, null, 2))]),
      ),
    ),
  );
}
