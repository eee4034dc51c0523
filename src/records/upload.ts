import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { openCollection } from "../catalog/catalog.ts";
import { fileOptions, type Collection, type FieldDef } from "../catalog/types.ts";
import { ValidationError, badRequest, payloadTooLarge } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { canRead, checkRecordAccess } from "./access.ts";
import { createRecord } from "./create.ts";
import { updateRecord } from "./update.ts";
import type { IfMatch } from "./version.ts";
import { checkAccess, recordNotFound, recordOpAccess } from "../rules/access.ts";
import { checkedRuleOf, isExpressionRule } from "../rules/expr/rule.ts";
import { prepareRules } from "../rules/scope.ts";
import { MultipartReader, multipartBoundary, tooLarge, type Part } from "../files/multipart.ts";
import { fileKey, fileName, NAME_RE } from "../files/names.ts";
import { extensionOf, fileType, SNIFF_BYTES, sniffType, typeAllowed } from "../files/sniff.ts";
import { storageOf } from "../files/storage.ts";
import { fileFieldValue, fileFields, holdNames, namesOf, releaseNames, withFileChanges, type FileChange } from "../files/values.ts";

// Creates and updates sent as multipart/form-data (CONTRACT §14): plain fields as form fields (JSON values as
// strings of JSON), files under their field's name, `field+` to append to a field of several files, `field-` to
// name files to remove. Each file streams to storage as it arrives, under its field's size cap; the record is
// written after, through the usual create or update (its rules, hooks, events), so a crash in between leaves
// only files that no record names (`baas storage gc` removes them), never a record naming a missing file.

/** True when a request's body is multipart/form-data (with a boundary or not: one without is 400 when read). */
export const isMultipart = (request: Request) => /^multipart\/form-data\s*(;|$)/i.test(request.headers.get("content-type") ?? "");

const refuse = (field: string, rule: string, message: string) => new ValidationError([{ field, rule, message }]);

/** What a multipart body may hold besides its files: the plain fields and every part's headers. */
export const MULTIPART_FORM_BYTES = 1024 * 1024;

/**
 * The most a multipart body to `col` may hold (CONTRACT §14: the sum of the file fields' `max_size`): every file
 * field's files at their cap, and MULTIPART_FORM_BYTES for the rest.
 */
export function multipartLimit(col: Collection): number {
  let sum = MULTIPART_FORM_BYTES;
  for (const def of fileFields(col)) {
    const o = fileOptions(def)!;
    sum += o.max_size * o.max_count;
  }
  return sum;
}

/** `POST /:collection` with a multipart body. */
export async function createWithFiles(ctx: AppContext, name: string, request: Request, p: Principal): Promise<RecordJson> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const col = h.col;
  // Checked before a byte is stored, where the rule decides without the record (the create repeats it): also an
  // expression that does not read `@request.body` (one that refuses the caller whatever the record, anonymous
  // callers under `@auth.id != null`, refuses here); one that reads it is decided by the create, on the record.
  if (!readsBody(col, "create")) checkAccess(col, "create", p);
  return await writeWithFiles(ctx, col, request, null, (data) => createRecord(ctx, col.name, data, p));
}

/** `PATCH /:collection/:id` with a multipart body (`ifMatch` as for a JSON body). */
export async function updateWithFiles(ctx: AppContext, name: string, id: string, request: Request, p: Principal, opts: { ifMatch?: IfMatch } = {}): Promise<RecordJson> {
  const h = await openCollection(ctx, name);
  prepareRules(h.catalog);
  const col = h.col;
  // An expression update rule that names the body: only the read rule is checked here, the update rule by the update.
  const access = readsBody(col, "update") ? undefined : recordOpAccess(col, "update", p);
  // Checked before a byte is stored (the update checks again, inside its transaction, on the record as it is then).
  const previous = await fetchRecord(ctx, col, id);
  if (!previous || previous._deleted_at !== null) throw recordNotFound();
  if (access !== undefined) await checkRecordAccess(ctx, col, "update", p, access, previous);
  else if (!(await canRead(ctx, col, p, previous))) throw recordNotFound();
  return await writeWithFiles(ctx, col, request, previous, (data) => updateRecord(ctx, col.name, id, data, p, opts));
}

/** True when the collection's rule for `op` is an expression that reads `@request.body` (or is not checked yet). */
function readsBody(col: Collection, op: "create" | "update"): boolean {
  if (!isExpressionRule(col.rules[op])) return false;
  const rule = checkedRuleOf(col, op);
  return !rule || !!rule.bodyFields;
}

async function writeWithFiles(
  ctx: AppContext,
  col: Collection,
  request: Request,
  previous: RecordJson | null,
  write: (data: Record<string, unknown>) => Promise<RecordJson>,
): Promise<RecordJson> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (boundary === null) throw badRequest("malformed multipart body: the Content-Type names no boundary");
  const max = multipartLimit(col);
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge(max);
  if (!request.body) throw badRequest("the request body is empty");
  const reader = new MultipartReader(request.body, boundary, max);
  const stored: string[] = [];
  try {
    const data: Record<string, unknown> = {};
    const changes = new Map<FieldDef, FileChange>();
    const change = (def: FieldDef) => {
      let c = changes.get(def);
      if (!c) changes.set(def, (c = { replace: null, append: [], remove: [], clear: false }));
      return c;
    };
    let plainBytes = 0;
    for (;;) {
      const part = await reader.next();
      if (!part) break;
      const op = part.name.endsWith("+") ? "+" : part.name.endsWith("-") ? "-" : "";
      const field = op ? part.name.slice(0, -1) : part.name;
      const def = col.fieldMap.get(field.toLowerCase());
      const file = def?.type === "file" && def.name === field ? def : undefined;
      if (part.filename !== undefined) {
        if (!file || op === "-") {
          reader.cancel();
          throw refuse(part.name, "type", `"${part.name}" is not a file field.`);
        }
        const c = change(file);
        const list = op === "+" ? c.append : (c.replace ??= []);
        const stored1 = await storeFile(ctx, col, file, part, c.append.length + (c.replace?.length ?? 0), reader, Number.isFinite(declared) ? declared : undefined);
        if (stored1) {
          stored.push(stored1);
          holdNames([stored1]);
          list.push(stored1);
        }
        continue;
      }
      const text = await part.text(Math.max(0, ctx.config.maxBodyBytes - plainBytes));
      plainBytes += text.length;
      if (file) {
        if (op === "-") change(file).remove.push(...removalNames(part.name, text));
        else if (op === "" && (text === "" || text === "null")) change(file).clear = true;
        else {
          reader.cancel();
          throw refuse(part.name, "file", `"${part.name}" takes files: send them as file parts.`);
        }
        continue;
      }
      // An operator of a plain field ("n+", "tags-": see records/operators.ts) takes the JSON its text holds.
      if (op) data[part.name] = plainValue(def, text);
      else data[field] = plainValue(def, text);
    }
    for (const [def, c] of changes) data[def.name] = fileFieldValue(def, c, previous);
    // An update computes the fields again on the record as its transaction reads it (parallel appends keep theirs).
    return await write(previous ? withFileChanges(data, changes) : data);
  } catch (err) {
    reader.cancel();
    // A refused or failed write leaves nothing behind: what this request stored is deleted.
    if (stored.length) {
      const storage = storageOf(ctx);
      await Promise.all(stored.map((n) => storage.delete(fileKey(col.name, n)).catch(() => {})));
    }
    throw err;
  } finally {
    releaseNames(stored);
  }
}

/**
 * A plain form field's value: the text itself for a text field, else the JSON it holds; text that is not JSON
 * stays text, for the field's type check to refuse as it refuses the same value in a JSON body (`"n" must be a number.`).
 */
function plainValue(def: FieldDef | undefined, text: string): unknown {
  if (def?.type === "text") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The names a `field-` part gives: one name, or a JSON array of names. */
function removalNames(field: string, text: string): string[] {
  const t = text.trim();
  if (t.startsWith("[")) {
    try {
      const v = JSON.parse(t);
      if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v;
    } catch {
      // refused below
    }
    throw refuse(field, "file", `"${field}" takes a file name or a JSON array of names.`);
  }
  return t ? [t] : [];
}

/**
 * Streams one file part to storage: refused (and the body no more read) when the field is full (422 `max`),
 * its type (fileType: its bytes, else its name's extension) is not allowed (422 `mime`), or it passes the field's `max_size` (413).
 * An empty part without a file name (a form's empty file input) is skipped: null.
 */
async function storeFile(
  ctx: AppContext,
  col: Collection,
  def: FieldDef,
  part: Part,
  already: number,
  reader: MultipartReader,
  bodyBytes: number | undefined,
): Promise<string | null> {
  const opts = fileOptions(def)!;
  const it = part.chunks()[Symbol.asyncIterator]();
  // The first bytes decide the type before anything is stored.
  const head: Uint8Array[] = [];
  let headSize = 0;
  let ended = false;
  while (headSize < SNIFF_BYTES) {
    const n = await it.next();
    if (n.done) {
      ended = true;
      break;
    }
    head.push(n.value);
    headSize += n.value.byteLength;
  }
  if (ended && headSize === 0 && !part.filename) return null;
  if (already + 1 > opts.max_count) {
    reader.cancel();
    throw refuse(def.name, "max", opts.max_count === 1 ? `"${def.name}" takes one file.` : `"${def.name}" holds at most ${opts.max_count} files.`);
  }
  // The pieces are views of the body (one may be the whole file): only the bytes the sniffer reads are joined.
  const first = head.length === 1 ? head[0]!.subarray(0, SNIFF_BYTES) : Buffer.concat(head, Math.min(headSize, SNIFF_BYTES));
  let name = fileName(part.filename);
  // A name without an extension gets the one of its type: the type the client sent, when that is an inert type the
  // bytes do not contradict (fileType decides, from the bytes first), else the one a signature gives: `blob` sent as
  // image/png is `blob.png`. Only inert types have one (extensionOf); plain text or bytes of no known kind get none.
  const sniffed = sniffType(first);
  let type = fileType(first, name, sniffed);
  if (!name.includes(".")) {
    const declared = extensionOf(part.type.split(";")[0]!.trim());
    const ext = declared ? extensionOf(fileType(first, `x.${declared}`, sniffed)) : GENERIC.has(sniffed) ? undefined : extensionOf(sniffed);
    if (ext) {
      name = fileName(`${part.filename || "file"}.${ext}`);
      type = fileType(first, name, sniffed);
    }
  }
  if (!typeAllowed(type, opts.mime)) {
    reader.cancel();
    throw refuse(def.name, "mime", `"${def.name}" does not take ${type} files (allowed: ${opts.mime.join(", ")}).`);
  }
  if (headSize > opts.max_size) {
    reader.cancel();
    throw fileTooLarge(def, opts.max_size);
  }
  if (!NAME_RE.test(name)) throw new Error("made an invalid file name");
  async function* body(): AsyncIterable<Uint8Array> {
    let size = headSize;
    yield* head;
    if (ended) return;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      size += n.value.byteLength;
      if (size > opts.max_size) {
        reader.cancel();
        throw fileTooLarge(def, opts.max_size);
      }
      yield n.value;
    }
  }
  // The request's declared length bounds the file's size (a small file is written faster, see FileStorage.write).
  await storageOf(ctx).write(fileKey(col.name, name), body(), { type, size: bodyBytes });
  return name;
}

/** What the bytes of a file say when they say no more than "text" or "binary". */
const GENERIC = new Set(["text/plain", "application/octet-stream"]);

const fileTooLarge = (def: FieldDef, max: number) => payloadTooLarge(max, `a file of "${def.name}"`);
