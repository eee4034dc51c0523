/**
 * An example lifecycle hook file for baas. Copy it into HOOKS_DIR (default `<data>/hooks`) and
 * name it after its collection: a running `baas serve` loads it within a second (and again
 * whenever it changes; `POST /admin/hooks/reload` does the same). A file that fails to load
 * keeps the version before it and the server logs why.
 *
 * Handlers may be synchronous or async and run inside the operation's transaction, for single,
 * bulk and batch operations alike; `e.tx` reads and writes other records in that transaction
 * (see docs/API.md, "Lifecycle hooks"). Throwing rolls the whole operation back: the client
 * gets 400 `hook_rejected` with the message (or the thrown object's `status`); in a batch, 400
 * `batch_failed` naming the operation. Files whose names start with `_` are not loaded as
 * hooks, so shared helpers can live next to the hooks that import them. `baas types --hooks`
 * writes the exact types of the events of your collections.
 */

interface HookEvent {
  collection: string;
  op: "create" | "update" | "delete" | "restore";
  /** The fields sent by the client; change them in before* handlers. Null for deletes. */
  data: Record<string, unknown> | null;
  /** The stored record: after* handlers; for update/delete, the record before the change. */
  record: Record<string, unknown> | null;
  previous: Record<string, unknown> | null;
  auth: { kind: "anonymous" | "admin" | "user"; id: string | null; roles: string[] };
  /** Reads and writes in the same transaction, with admin rights (docs/API.md, "`tx`"). */
  tx: {
    get(collection: string, id: string): Promise<Record<string, unknown> | null>;
    list(collection: string, opts?: { filter?: string | string[]; sort?: string | string[]; limit?: number; after?: string }): Promise<Record<string, unknown>[]>;
    create(collection: string, data: Record<string, unknown>): Promise<Record<string, unknown>>;
    update(collection: string, id: string, data: Record<string, unknown>): Promise<Record<string, unknown>>;
    delete(collection: string, id: string, opts?: { hard?: boolean }): Promise<Record<string, unknown>>;
  };
}

const slugify = (s: string): string =>
  s
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");

export default {
  collection: "posts", // or "*" for every collection

  beforeCreate(e: HookEvent): void {
    const data = e.data!;
    if (typeof data.title !== "string" || !data.title.trim()) throw new Error("a post needs a title");
    data.slug = slugify(data.title);
    data.status ??= "draft";
  },

  beforeUpdate(e: HookEvent): void {
    const data = e.data!;
    if (e.previous?.status === "archived") throw { status: 409, message: "archived posts cannot be edited" };
    if (typeof data.title === "string") data.slug = slugify(data.title);
  },

  beforeDelete(e: HookEvent): void {
    if (e.record?.status === "published" && !e.auth.roles.includes("editor"))
      throw { status: 403, message: "only editors may delete published posts" };
  },

  afterCreate(e: HookEvent): void {
    // After-handlers see the stored record; throwing here still rolls the insert back.
    if (e.record && String(e.record.slug).length > 200) throw new Error("slug too long");
  },

  async onCommit(event: { action: string; record: Record<string, unknown>; by: string | null }): Promise<void> {
    // Runs after the commit, once per changed record: the place for side effects outside the
    // database. A throw is logged; the client already has its answer.
    if (event.action === "create") console.log(`post ${event.record._id} created by ${event.by ?? "anonymous"}`);
  },
};
