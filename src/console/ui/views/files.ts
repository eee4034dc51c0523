/** Files in the records browser (CONTRACT §14): previews, downloads, upload and remove controls. */
import { api, seg } from "../api.ts";
import { h } from "../dom.ts";
import { checkbox, field } from "../ui.ts";
import type { CollectionJson } from "./collections.ts";

type FileField = { name: string; type: string; max_count?: number; mime?: string[]; max_size?: number };

/** The file fields of a collection. */
export function fileFieldsOf(col: CollectionJson): FileField[] {
  return (col.fields as FileField[]).filter((f) => f.type === "file");
}

/** The names a file field's value holds. */
export const fileNames = (v: unknown): string[] => (typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

let token: { value: string; until: number } | null = null;

/**
 * A file token for `<img src>` and links (an `<img>` cannot send the admin token), asked for once and used
 * while it has more than 30 s left.
 */
export async function fileToken(): Promise<string> {
  if (token && token.until > Date.now()) return token.value;
  const { token: value } = await api<{ token: string }>("POST", "/files/token");
  token = { value, until: Date.now() + 90_000 };
  return value;
}

/** The URL of a file of a record, with a file token (and `thumb`, or `download=1`). */
export function fileUrl(col: string, id: string, name: string, t: string, opts: { thumb?: string; download?: boolean } = {}): string {
  const q = new URLSearchParams({ token: t });
  if (opts.thumb) q.set("thumb", opts.thumb);
  if (opts.download) q.set("download", "1");
  return `/api/v1/files/${seg(col)}/${seg(id)}/${seg(name)}?${q}`;
}

const IMAGE = /\.(png|jpe?g|gif|webp|avif|bmp)$/i;
const PDF = /\.pdf$/i;

/** A table cell for a file field: a small preview of images, and each name as a link that opens or downloads it. */
export function fileCell(col: string, id: string, value: unknown, t: string): HTMLElement {
  return h(
    "span",
    { class: "cell files", "data-files": "" },
    fileNames(value).map((n) =>
      h(
        "a",
        { href: fileUrl(col, id, n, t, IMAGE.test(n) || PDF.test(n) ? {} : { download: true }), target: "_blank", rel: "noopener", title: n, class: "file-link" },
        IMAGE.test(n) ? h("img", { src: fileUrl(col, id, n, t, { thumb: "48x48" }), alt: n, width: 48, height: 48, loading: "lazy", class: "thumb" }) : null,
        IMAGE.test(n) ? null : n,
      ),
    ),
  );
}

/**
 * The form control of a file field: its files (preview, open, download, a box to remove each) and a file
 * input that adds files (several where the field holds several, replacing the one file otherwise).
 */
export function fileControl(col: string, id: string | null, def: FileField, value: unknown, t: string | null) {
  const names = fileNames(value);
  const many = (def.max_count ?? 1) > 1;
  const removes = names.map((n) => ({ name: n, box: checkbox(`remove ${n}`, false) }));
  const input = h("input", { type: "file", name: `file-${def.name}`, multiple: many, accept: def.mime?.length ? def.mime.join(",") : null });
  const list = h(
    "ul",
    { class: "file-list" },
    removes.map(({ name, box }) =>
      h(
        "li",
        { "data-file": name },
        id && t && IMAGE.test(name) ? h("img", { src: fileUrl(col, id, name, t, { thumb: "96x96" }), alt: name, width: 96, height: 96, class: "thumb" }) : null,
        id && t ? h("a", { href: fileUrl(col, id, name, t), target: "_blank", rel: "noopener" }, IMAGE.test(name) || PDF.test(name) ? "Preview" : "Open") : null,
        " ",
        id && t ? h("a", { href: fileUrl(col, id, name, t, { download: true }), download: name }, "Download") : null,
        " ",
        h("code", null, name),
        " ",
        box.el,
      ),
    ),
  );
  const limits = `${many ? `up to ${def.max_count} files` : "one file"}, each up to ${Math.round((def.max_size ?? 5242880) / 1048576)} MiB${def.mime?.length ? ` (${def.mime.join(", ")})` : ""}`;
  return {
    el: field(`${def.name} (file: ${limits})`, h("div", { class: "file-field" }, names.length ? list : h("p", { class: "muted" }, "No file."), input)),
    /** What a multipart body sends for this field: files to add, names to remove (nothing when unchanged). */
    parts(): [string, Blob | string, string?][] {
      const out: [string, Blob | string, string?][] = [];
      const files = [...(input.files ?? [])];
      const removed = removes.filter((r) => r.box.input.checked).map((r) => r.name);
      if (many) {
        for (const n of removed) out.push([`${def.name}-`, n]);
        for (const f of files) out.push([`${def.name}+`, f, f.name]);
      } else if (files.length) out.push([def.name, files[0]!, files[0]!.name]);
      else if (removed.length) out.push([def.name, ""]);
      return out;
    },
  };
}
