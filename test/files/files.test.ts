import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { storageOf } from "../../src/files/storage.ts";
import { fileDeletionsSettled } from "../../src/files/values.ts";
import { ADMIN_SECRET, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { startS3rver, type S3Server } from "../helpers/s3.ts";
import { Images } from "../../src/files/images.ts";
import { imageThread, MAX_THUMB_SIZES, MAX_THUMBS_WAITING } from "../../src/files/thumbs.ts";
import { createClient } from "../../client/src/index.ts";

/** An image in `type` (WebP too: the codec the server uses). */
const encodeImage = (img: InstanceType<typeof Images>, type: string) => img.getBuffer(type as "image/png");
const Jimp = Images;

// Files (CONTRACT §14) through HTTP on the configured engine, stored in the data directory's folder and in a
// bucket of an S3-protocol server (s3rver): the same scenarios on each.

const PNG_1x1 = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201" + "f5e2d5d60000000049454e44ae426082",
  "hex",
);

// Thumbnails decode and encode images on the test's own CPU: a busy machine takes seconds, not a failure.
setDefaultTimeout(60_000);

for (const kind of ["local", "s3"] as const) describe(`files stored ${kind === "local" ? "in the data folder" : "in S3"}`, () => {
let t: TestApp;
let s3: S3Server | null = null;
let alice: { token: string; id: string };
let bob: { token: string; id: string };

/** Sends a multipart body built from `parts` (a Blob is a file part). */
async function send(method: string, path: string, parts: [string, string | Blob, string?][], token: string | null = ADMIN_SECRET, headers: Record<string, string> = {}) {
  const form = new FormData();
  for (const [k, v, filename] of parts) if (typeof v === "string") form.append(k, v);
  else form.append(k, v, filename ?? "file.bin");
  await t.ready;
  const res = await t.app.handle(
    new Request(`http://localhost${path}`, { method, body: form, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } }),
  );
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body, headers: res.headers, text };
}

async function get(path: string, token: string | null = ADMIN_SECRET, headers: Record<string, string> = {}) {
  await t.ready;
  const res = await t.app.handle(new Request(`http://localhost${path}`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } }));
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The names of the stored files of the collection (thumbnails aside). */
const storageFiles = async () => {
  const names: string[] = [];
  for await (const f of storageOf(t.ctx).list("docs/")) if (!f.key.startsWith("docs/thumbs/")) names.push(f.key.slice(5));
  return names;
};

beforeAll(async () => {
  if (kind === "s3") s3 = await startS3rver();
  t = createTestApp(s3 ? { env: s3.env(`run${Date.now()}`) } : {});
  const made = await t.admin("POST", "/api/v1/admin/collections", {
    name: "docs",
    rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
    fields: [
      { name: "title", type: "text" },
      { name: "n", type: "number" },
      { name: "cover", type: "file", mime: ["image/png", "image/jpeg"], max_size: 64 * 1024 },
      { name: "attachments", type: "file", max_count: 3, max_size: 1024 },
    ],
  });
  expect(made.status).toBe(201);
  alice = await registerUser(t, "alice@example.com");
  bob = await registerUser(t, "bob@example.com");
});
afterAll(async () => {
  await t.close();
  await s3?.stop();
});

describe("file fields", () => {
  test("a file field is declared with its options and shown with their defaults", async () => {
    const col = await t.admin("GET", "/api/v1/admin/collections/docs");
    expect(col.body.fields).toContainEqual({ name: "cover", type: "file", max_size: 65536, mime: ["image/png", "image/jpeg"], max_count: 1 });
    const added = await t.admin("POST", "/api/v1/admin/collections/docs/fields", { name: "extra", type: "file" });
    expect(added.status).toBe(201);
    expect(added.body.fields).toContainEqual({ name: "extra", type: "file", max_size: 5 * 1024 * 1024, mime: [], max_count: 1 });
    for (const bad of [{ max_size: 0 }, { max_size: 1024 ** 3 + 1 }, { mime: "image/png" }, { mime: ["nope"] }, { max_count: 0 }, { colour: 1 }]) {
      const r = await t.admin("POST", "/api/v1/admin/collections/docs/fields", { name: "bad", type: "file", ...bad });
      expect(r.status).toBe(400);
    }
    expect((await t.admin("PATCH", "/api/v1/admin/collections/docs/fields/extra", { type: "text" })).status).toBe(409);
    expect((await t.admin("DELETE", "/api/v1/admin/collections/docs/fields/extra")).status).toBe(200);
  });
});

describe("the stored type", () => {
  test("comes from the bytes, else from the name's extension among inert types, else from the type sent for a name without one", async () => {
    const made = await t.admin("POST", "/api/v1/admin/collections", {
      name: "typed",
      rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
      fields: [
        { name: "sheet", type: "file", mime: ["text/csv"] },
        { name: "img", type: "file", mime: ["image/png"] },
        { name: "any", type: "file", max_count: 5 },
      ],
    });
    expect(made.status).toBe(201);
    const typeOf = async (rec: { _id: string }, name: string) => {
      const r = await get(`/api/v1/files/typed/${rec._id}/${name}`, alice.token);
      expect(r.status).toBe(200);
      return [r.headers.get("content-type"), r.headers.get("content-disposition")!.split(";")[0]];
    };
    // A CSV (plain text by its bytes) is text/csv by its name; bytes without a signature named .png are image/png.
    let r = await send("POST", "/api/v1/typed", [["sheet", new Blob(["a,b\n1,2\n"], { type: "text/csv" }), "d.csv"], ["img", new Blob(["not really a png"], { type: "image/png" }), "fake.png"]], alice.token);
    expect(r.status).toBe(201);
    expect(await typeOf(r.body, r.body.sheet)).toEqual(["text/csv", "attachment"]);
    expect(await typeOf(r.body, r.body.img)).toEqual(["image/png", "inline"]);
    // A name without an extension takes the type sent; a name can never make markup inert, nor bytes markup.
    r = await send("POST", "/api/v1/typed", [
      ["any", new Blob(["placeholder"], { type: "image/png" }), "blob"],
      ["any", new Blob(["fake pdf bytes"], { type: "application/pdf" }), "fake.pdf"],
      ["any", new Blob(["<html><script>alert(1)</script></html>"], { type: "image/png" }), "x.png"],
      ["any", new Blob(["<html><script>alert(1)</script></html>"], { type: "text/html" }), "page"],
      ["any", new Blob([new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3])], { type: "application/zip" }), "report.docx"],
    ], alice.token);
    expect(r.status).toBe(201);
    const [blob, pdf, html, page, docx] = r.body.any as string[];
    expect(blob).toMatch(/^[a-z0-9]{10}_blob\.png$/);
    expect(page).toMatch(/^[a-z0-9]{10}_page$/);
    expect(await typeOf(r.body, blob!)).toEqual(["image/png", "inline"]);
    expect(await typeOf(r.body, pdf!)).toEqual(["application/pdf", "inline"]);
    expect(await typeOf(r.body, html!)).toEqual(["text/html", "attachment"]);
    expect(await typeOf(r.body, page!)).toEqual(["text/html", "attachment"]);
    expect(await typeOf(r.body, docx!)).toEqual(["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "attachment"]);
    // A PNG without an extension gets .png, sent as image/png or with no type; plain text without one gets none.
    r = await send("POST", "/api/v1/typed", [
      ["any", new Blob([PNG_1x1], { type: "image/png" }), "photo"],
      ["any", new Blob([PNG_1x1]), "raw"],
      ["any", new Blob(["just some notes"]), "notes"],
    ], alice.token);
    expect(r.status).toBe(201);
    const [photo, raw, notes] = r.body.any as string[];
    expect([photo, raw, notes].map((n) => n!.slice(11))).toEqual(["photo.png", "raw.png", "notes"]);
    expect(await typeOf(r.body, raw!)).toEqual(["image/png", "inline"]);
    // The mime list sees the same type: text named .txt is not a CSV, markup named .png is not a PNG.
    r = await send("POST", "/api/v1/typed", [["sheet", new Blob(["a,b"], { type: "text/csv" }), "d.txt"]], alice.token);
    expect({ status: r.status, rule: r.body.errors?.[0]?.rule }).toEqual({ status: 422, rule: "mime" });
    r = await send("POST", "/api/v1/typed", [["img", new Blob(["<html><body>x</body></html>"], { type: "image/png" }), "x.png"]], alice.token);
    expect({ status: r.status, rule: r.body.errors?.[0]?.rule }).toEqual({ status: 422, rule: "mime" });
  });
});

describe("a record its read rule hides", () => {
  test("answers its files 404, under a role rule and a disabled rule alike (on the record itself 403)", async () => {
    for (const [name, read] of [["staffdocs", { role: "staff" }], ["lockeddocs", "disabled"]] as const) {
      const made = await t.admin("POST", "/api/v1/admin/collections", {
        name,
        rules: { read, create: "authenticated", update: "owner", delete: "owner" },
        fields: [{ name: "pic", type: "file" }],
      });
      expect(made.status).toBe(201);
      const r = await send("POST", `/api/v1/${name}`, [["pic", new Blob([PNG_1x1]), "a.png"]], alice.token);
      expect(r.status).toBe(201);
      const url = `/api/v1/files/${name}/${r.body._id}/${r.body.pic}`;
      expect((await t.req("GET", `/api/v1/${name}/${r.body._id}`, { token: alice.token })).status).toBe(403);
      expect((await get(url, alice.token)).status).toBe(404);
      expect((await get(url, null)).status).toBe(404);
      expect((await get(url)).status).toBe(200);
    }
  });
});

describe("the multipart body limit", () => {
  test("is the file fields' caps plus 1 MiB: a small file with 2 MiB of text is 413, with 512 KiB of text 201", async () => {
    // A collection of its own: other tests add file fields to `docs`, which raises its limit.
    const made = await t.admin("POST", "/api/v1/admin/collections", {
      name: "limited",
      rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
      fields: [{ name: "title", type: "text" }, { name: "pic", type: "file", max_size: 64 * 1024 }],
    });
    expect(made.status).toBe(201);
    let r = await send("POST", "/api/v1/limited", [["title", "x".repeat(2 * 1024 * 1024)], ["pic", new Blob([PNG_1x1]), "a.png"]], alice.token);
    // The limit named exactly: 64 KiB + 1 MiB in bytes (not rounded down to "1 MiB").
    expect({ status: r.status, body: r.body }).toEqual({ status: 413, body: { error: `the request body is larger than ${64 * 1024 + 1048576} bytes`, code: "payload_too_large" } });
    r = await send("POST", "/api/v1/limited", [["title", "x".repeat(512 * 1024)], ["pic", new Blob([PNG_1x1]), "a.png"]], alice.token);
    expect(r.status).toBe(201);
    expect(r.body.title.length).toBe(512 * 1024);
  });
});

describe("upload and download", () => {
  test("a multipart create stores the file and the record names it; the owner downloads it with the safety headers", async () => {
    const events: { record: Record<string, unknown> }[] = [];
    const stop = t.ctx.events.subscribe((e) => void events.push(e as { record: Record<string, unknown> }));
    const r = await send("POST", "/api/v1/docs", [["title", "hello"], ["n", "12"], ["cover", new Blob([PNG_1x1], { type: "text/html" }), "My Photo!.png"]], alice.token);
    expect(r.status).toBe(201);
    // The change event carries the record as read: the file's name, never its bytes.
    await fileDeletionsSettled(t.ctx);
    expect(events.find((e) => e.record._id === r.body._id)?.record.cover).toBe(r.body.cover);
    stop();
    expect(r.body.title).toBe("hello");
    expect(r.body.n).toBe(12);
    expect(r.body.cover).toMatch(/^[a-z0-9]{10}_My_Photo\.png$/);
    expect(r.body.attachments).toBeNull();
    const url = `/api/v1/files/docs/${r.body._id}/${r.body.cover}`;
    const d = await get(url, alice.token);
    expect(d.status).toBe(200);
    expect(d.bytes.equals(PNG_1x1)).toBe(true);
    // The stored type is the sniffed one, not what the client said (text/html).
    expect(d.headers.get("content-type")).toBe("image/png");
    expect(d.headers.get("x-content-type-options")).toBe("nosniff");
    expect(d.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(d.headers.get("accept-ranges")).toBe("bytes");
    // A browser may keep it (and ask with If-None-Match): it varies by Origin only, not `*`.
    expect([d.headers.get("vary"), d.headers.get("cache-control")]).toEqual(["Origin", "private, no-cache"]);
    expect(d.headers.get("content-disposition")).toBe(`inline; filename="${r.body.cover}"`);
    expect((await get(`${url}?download=1`, alice.token)).headers.get("content-disposition")).toStartWith("attachment");
    // Range and 304.
    const etag = d.headers.get("etag")!;
    expect(etag).toBeTruthy();
    expect((await get(url, alice.token, { "if-none-match": etag })).status).toBe(304);
    const part = await get(url, alice.token, { range: "bytes=1-3" });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 1-3/${PNG_1x1.length}`);
    expect(part.bytes.equals(PNG_1x1.subarray(1, 4))).toBe(true);
    const tail = await get(url, alice.token, { range: "bytes=-4" });
    expect(tail.bytes.equals(PNG_1x1.subarray(PNG_1x1.length - 4))).toBe(true);
    const outside = await get(url, alice.token, { range: "bytes=9999-" });
    expect({ status: outside.status, type: outside.headers.get("content-type"), range: outside.headers.get("content-range") }).toEqual({
      status: 416,
      type: "application/json; charset=utf-8",
      range: `bytes */${PNG_1x1.length}`,
    });
    expect(JSON.parse(outside.bytes.toString()).error).toBe("the requested range is outside the file");
    // Hidden (the read rule is owner): 404 to others and to anonymous callers alike (CONTRACT §14); admins pass.
    expect((await get(url, bob.token)).status).toBe(404);
    expect((await get(url, null)).status).toBe(404);
    expect((await get(url)).status).toBe(200);
    // A name the record does not hold: 404.
    expect((await get(`/api/v1/files/docs/${r.body._id}/abcdefghij_other.png`, alice.token)).status).toBe(404);
  });

  test("file tokens: any signed-in caller gets one, valid 2 minutes, standing for that caller only", async () => {
    const r = await send("POST", "/api/v1/docs", [["cover", new Blob([PNG_1x1]), "a.png"]], alice.token);
    const url = `/api/v1/files/docs/${r.body._id}/${r.body.cover}`;
    expect((await t.req("POST", "/api/v1/files/token")).status).toBe(401);
    const tok = await t.req("POST", "/api/v1/files/token", { token: alice.token });
    expect(tok.status).toBe(200);
    expect((await get(`${url}?token=${tok.body.token}`, null)).status).toBe(200);
    const bobs = await t.req("POST", "/api/v1/files/token", { token: bob.token });
    expect((await get(`${url}?token=${bobs.body.token}`, null)).status).toBe(404);
    // Not an access token.
    expect((await t.req("GET", "/api/v1/auth/me", { token: tok.body.token })).status).toBe(401);
    expect((await get(`${url}?token=${alice.token}`, null)).status).toBe(401);
    // One WWW-Authenticate value on a refused token (CONTRACT §1).
    const refused = await get(`${url}?token=abc`, null);
    expect({ status: refused.status, auth: refused.headers.get("www-authenticate") }).toEqual({ status: 401, auth: "Bearer" });
    // Made with an API key: it stands for the key, and goes with it.
    const key = await t.req("POST", "/api/v1/auth/api-keys", { token: alice.token, body: { name: `files-${kind}` } });
    const keyed = await t.req("POST", "/api/v1/files/token", { headers: { "x-api-key": key.body.key } });
    expect(keyed.status).toBe(200);
    expect((await get(`${url}?token=${keyed.body.token}`, null)).status).toBe(200);
    expect((await t.req("DELETE", `/api/v1/auth/api-keys/${key.body.id}`, { token: alice.token })).status).toBe(200);
    expect((await get(`${url}?token=${keyed.body.token}`, null)).status).toBe(401);
    t.clock.advance(121_000);
    expect((await get(`${url}?token=${tok.body.token}`, null)).status).toBe(401);
  });

  test("refusals: a type not allowed (422 mime), a file too large (413), too many files (422 max), a name sent as JSON (422 file), nothing stored", async () => {
    const before = (await storageFiles()).length;
    const html = Buffer.from("<html><script>alert(1)</script></html>");
    let r = await send("POST", "/api/v1/docs", [["cover", new Blob([html], { type: "image/png" }), "x.png"]], alice.token);
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ field: "cover", rule: "mime" });
    r = await send("POST", "/api/v1/docs", [["cover", new Blob([PNG_1x1, Buffer.alloc(70 * 1024)]), "big.png"]], alice.token);
    expect(r.status).toBe(413);
    expect(r.body.code).toBe("payload_too_large");
    const small = (s: string) => new Blob([s]);
    r = await send("POST", "/api/v1/docs", [["attachments", small("a"), "a.txt"], ["attachments", small("b"), "b.txt"], ["attachments", small("c"), "c.txt"], ["attachments", small("d"), "d.txt"]], alice.token);
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ field: "attachments", rule: "max" });
    r = await send("POST", "/api/v1/docs", [["title", "x"], ["title+", small("a"), "a.txt"]], alice.token);
    expect(r.status).toBe(422);
    // multipart/form-data without a boundary: 400 saying so (not read as JSON).
    const unbounded = await t.req("POST", "/api/v1/docs", { token: alice.token, headers: { "content-type": "multipart/form-data" }, body: "--x\r\n" });
    expect({ status: unbounded.status, body: unbounded.body }).toEqual({ status: 400, body: { error: "malformed multipart body: the Content-Type names no boundary", code: "bad_request" } });
    // A form value that is not JSON for a number field: refused as the same value in a JSON body is.
    r = await send("POST", "/api/v1/docs", [["n", "abc"]], alice.token);
    expect({ status: r.status, errors: r.body.errors }).toEqual({ status: 422, errors: [{ field: "n", rule: "type", message: '"n" must be a number.' }] });
    expect((await storageFiles()).length).toBe(before);
    const json = await t.req("POST", "/api/v1/docs", { token: alice.token, body: { cover: "abcdefghij_a.png" } });
    expect(json.status).toBe(422);
    expect(json.body.errors[0]).toMatchObject({ field: "cover", rule: "file" });
    // The create rule is checked before anything is stored.
    r = await send("POST", "/api/v1/docs", [["cover", new Blob([PNG_1x1]), "a.png"]], null);
    expect(r.status).toBe(401);
    expect((await storageFiles()).length).toBe(before);
  });

  test("an expression rule that refuses the caller whatever the record refuses an upload before its body is read", async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections", {
      name: `gated${kind}`,
      fields: [{ name: "doc", type: "file", max_size: 1 << 20 }],
      rules: { read: "public", create: "@auth.verified = true", update: "_owner_id = @auth.id && @auth.verified = true" },
    })).status).toBe(201);
    const made = await t.admin("POST", `/api/v1/gated${kind}`, { title: "x" });
    for (const [method, path, token, status] of [
      ["POST", `/api/v1/gated${kind}`, null, 401],
      ["POST", `/api/v1/gated${kind}`, alice.token, 403],
      ["PATCH", `/api/v1/gated${kind}/${made.body._id}`, alice.token, 403],
    ] as const) {
      let pulled = 0;
      const boundary = "gateboundary";
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="doc"; filename="a.bin"\r\n\r\n`));
        },
        pull(c) {
          pulled += 64 * 1024;
          if (pulled > 900 * 1024) return c.close();
          c.enqueue(new Uint8Array(64 * 1024));
        },
      });
      const res = await t.app.handle(
        new Request(`http://localhost${path}`, { method, body, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": `multipart/form-data; boundary=${boundary}` } }),
      );
      expect({ path, method, status: res.status }).toEqual({ path, method, status });
      expect(pulled).toBeLessThan(256 * 1024);
    }
  });

  test("a Content-Length over the limit is refused before the body is read", async () => {
    await t.ready;
    let pulled = 0;
    const body = new ReadableStream({
      pull(c) {
        pulled++;
        c.enqueue(new Uint8Array(1024));
        if (pulled > 10_000) c.close();
      },
    });
    const res = await t.app.handle(
      new Request("http://localhost/api/v1/docs", {
        method: "POST",
        body,
        headers: { authorization: `Bearer ${alice.token}`, "content-type": "multipart/form-data; boundary=xyz", "content-length": String(1 << 30) },
      }),
    );
    expect(res.status).toBe(413);
    expect(pulled).toBeLessThan(5);
  });

  test("a file over its field's size or of a type not allowed is refused without reading the rest of the body", async () => {
    await t.ready;
    for (const [head, status] of [[PNG_1x1, 413], [Buffer.from("<html><script>x</script>"), 422]] as const) {
      let pulled = 0;
      const boundary = "refusalboundary";
      const start = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="cover"; filename="a.png"\r\n\r\n`), head]);
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new Uint8Array(start));
        },
        pull(c) {
          pulled += 64 * 1024;
          // 100 MiB in all if it were read to its end.
          if (pulled > 100 * 1024 * 1024) return c.close();
          c.enqueue(new Uint8Array(64 * 1024));
        },
      });
      const res = await t.app.handle(
        new Request("http://localhost/api/v1/docs", { method: "POST", body, headers: { authorization: `Bearer ${alice.token}`, "content-type": `multipart/form-data; boundary=${boundary}` } }),
      );
      expect(res.status).toBe(status);
      // The cap is 64 KiB: a few pieces past it at most.
      expect(pulled).toBeLessThan(1024 * 1024);
    }
  });

  test("multi-file fields: append with field+, remove with field-; a replaced or removed file is deleted after commit", async () => {
    const f = (s: string, n: string): [string, Blob, string] => ["attachments", new Blob([s]), n];
    let r = await send("POST", "/api/v1/docs", [f("one", "1.txt"), f("two", "2.txt")], alice.token);
    expect(r.status).toBe(201);
    expect(r.body.attachments).toHaveLength(2);
    const id = r.body._id;
    const [a, b] = r.body.attachments;
    r = await send("PATCH", `/api/v1/docs/${id}`, [["attachments+", new Blob(["three"]), "3.txt"], ["attachments-", a]], alice.token);
    expect(r.status).toBe(200);
    expect(r.body.attachments).toHaveLength(2);
    expect(r.body.attachments[0]).toBe(b);
    const c = r.body.attachments[1];
    const txt = await get(`/api/v1/files/docs/${id}/${c}`, alice.token);
    expect(txt.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(txt.bytes.toString()).toBe("three");
    await fileDeletionsSettled(t.ctx);
    expect(await storageFiles()).not.toContain(a);
    expect(await storageFiles()).toContain(b);
    // Too many after appending: 422 max, and the new upload is not kept.
    const count = (await storageFiles()).length;
    r = await send("PATCH", `/api/v1/docs/${id}`, [["attachments+", new Blob(["x"]), "x.txt"], ["attachments+", new Blob(["y"]), "y.txt"]], alice.token);
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ field: "attachments", rule: "max" });
    expect((await storageFiles()).length).toBe(count);
    // JSON may reorder or drop names the record holds, never add one.
    r = await t.req("PATCH", `/api/v1/docs/${id}`, { token: alice.token, body: { attachments: [c] } });
    expect(r.status).toBe(200);
    expect(r.body.attachments).toEqual([c]);
    r = await t.req("PATCH", `/api/v1/docs/${id}`, { token: alice.token, body: { attachments: [c, a] } });
    expect(r.status).toBe(422);
    await fileDeletionsSettled(t.ctx);
    expect(await storageFiles()).not.toContain(b);
  });

  test("field+ uploads to one record at once each keep their file; those past max_count are refused and leave nothing", async () => {
    const r = await send("POST", "/api/v1/docs", [["title", "appended at once"]], alice.token);
    expect(r.status).toBe(201);
    const id = r.body._id;
    // Deletions other tests left pending settle first: they would change the count meanwhile.
    await fileDeletionsSettled(t.ctx);
    const before = (await storageFiles()).length;
    const letters = ["p", "q", "s", "u", "v"];
    const sent = await Promise.all(
      letters.map((x) => send("PATCH", `/api/v1/docs/${id}`, [["attachments+", new Blob([x]), `${x}.txt`]], alice.token)),
    );
    // max_count is 3: three appends commit, the other two find the field full.
    expect(sent.map((s) => s.status).sort()).toEqual([200, 200, 200, 422, 422]);
    for (const s of sent) if (s.status === 422) expect(s.body.errors[0]).toMatchObject({ field: "attachments", rule: "max" });
    const kept = (await t.req("GET", `/api/v1/docs/${id}`, { token: alice.token })).body.attachments as string[];
    expect(kept).toHaveLength(3);
    const contents = await Promise.all(kept.map(async (n) => (await get(`/api/v1/files/docs/${id}/${n}`, alice.token)).bytes.toString()));
    // The file of every append that answered 200, and no other.
    expect(contents.sort()).toEqual(letters.filter((_, i) => sent[i]!.status === 200).sort());
    await fileDeletionsSettled(t.ctx);
    expect((await storageFiles()).length).toBe(before + 3);
  });

  test("a write that fails after its files were stored (a unique index) leaves no file behind", async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections/docs/indexes", { fields: ["title"], unique: true })).status).toBe(201);
    const first = await send("POST", "/api/v1/docs", [["title", "only once"], ["cover", new Blob([PNG_1x1]), "a.png"]], alice.token);
    expect(first.status).toBe(201);
    const count = (await storageFiles()).length;
    const again = await send("POST", "/api/v1/docs", [["title", "only once"], ["cover", new Blob([PNG_1x1]), "b.png"]], alice.token);
    expect(again.status).toBe(409);
    const patch = await send("PATCH", `/api/v1/docs/${first.body._id}`, [["n", "1"], ["cover", new Blob([PNG_1x1]), "c.png"]], bob.token);
    expect(patch.status).toBe(404);
    expect((await storageFiles()).length).toBe(count);
    // The replaced file goes once the update commits; the record's own stays.
    const replaced = await send("PATCH", `/api/v1/docs/${first.body._id}`, [["cover", new Blob([PNG_1x1]), "d.png"]], alice.token);
    expect(replaced.status).toBe(200);
    await fileDeletionsSettled(t.ctx);
    const names = await storageFiles();
    expect(names).toContain(replaced.body.cover);
    expect(names).not.toContain(first.body.cover);
  });

  test("thumbnails of PNG, JPEG, GIF and WebP have exact sizes, are made once and kept; other types are served as they are", async () => {
    await t.admin("POST", "/api/v1/admin/collections/docs/fields", { name: "pics", type: "file", max_count: 4, mime: ["image/*"] });
    const source = new Jimp({ width: 300, height: 200, color: 0x3366ccff });
    const files: [string, Blob, string][] = [];
    for (const [type, ext] of [["image/png", "png"], ["image/jpeg", "jpg"], ["image/gif", "gif"], ["image/webp", "webp"]] as const)
      files.push(["pics", new Blob([new Uint8Array(await encodeImage(source, type))]), `p.${ext}`]);
    const r = await send("POST", "/api/v1/docs", files, alice.token);
    expect(r.status).toBe(201);
    const types = ["image/png", "image/jpeg", "image/gif", "image/webp"];
    for (const [i, name] of (r.body.pics as string[]).entries()) {
      const url = `/api/v1/files/docs/${r.body._id}/${name}`;
      for (const [thumb, w, h] of [["40x120", 40, 120], ["0x50", 75, 50], ["150x0", 150, 100]] as const) {
        // Two at once: made once, both answered.
        const [a, b] = await Promise.all([get(`${url}?thumb=${thumb}`, alice.token), get(`${url}?thumb=${thumb}`, alice.token)]);
        expect(a.status).toBe(200);
        expect(a.headers.get("content-type")).toBe(types[i]);
        expect(a.bytes.equals(b.bytes)).toBe(true);
        const img = await Jimp.read(a.bytes);
        expect([img.bitmap.width, img.bitmap.height]).toEqual([w, h]);
      }
    }
    const kept = [];
    for await (const f of storageOf(t.ctx).list("docs/thumbs/")) kept.push(f.key);
    expect(kept).toHaveLength(12);
    expect((await get(`/api/v1/files/docs/${r.body._id}/${r.body.pics[0]}?thumb=3000x10`, alice.token)).status).toBe(400);
    expect((await get(`/api/v1/files/docs/${r.body._id}/${r.body.pics[0]}?thumb=0x0`, alice.token)).status).toBe(400);
    const txt = await send("POST", "/api/v1/docs", [["attachments", new Blob(["plain"]), "a.txt"]], alice.token);
    const plain = await get(`/api/v1/files/docs/${txt.body._id}/${txt.body.attachments[0]}?thumb=10x10`, alice.token);
    expect(plain.bytes.toString()).toBe("plain");
    // Made on a thread of their own, not the server's (the binary's build is checked in test/cli).
    expect(imageThread()).toBe("own thread");
  });

  test("thumbnails asked at once are bounded: past those waiting, and past the sizes kept per file, the image itself is served", async () => {
    // A collection of its own: the other thumbnail test counts what `docs` keeps.
    const pics = `pictures${kind}`;
    expect((await t.admin("POST", "/api/v1/admin/collections", {
      name: pics,
      rules: { read: "public", create: "authenticated" },
      fields: [{ name: "cover", type: "file", mime: ["image/png"], max_size: 1 << 20 }],
    })).status).toBe(201);
    const source = new Jimp({ width: 64, height: 48, color: 0x33cc66ff });
    const png = new Uint8Array(await encodeImage(source, "image/png"));
    const r = await send("POST", `/api/v1/${pics}`, [["cover", new Blob([png]), "c.png"]], alice.token);
    expect(r.status).toBe(201);
    const url = `/api/v1/files/${pics}/${r.body._id}/${r.body.cover}`;
    // More distinct sizes at once than may wait, of an image that takes a while to decode: the rest are refused at
    // once, none fails otherwise.
    const large = new Uint8Array(await encodeImage(new Jimp({ width: 1200, height: 1200, color: 0x3366ccff }), "image/png"));
    const big = await send("POST", `/api/v1/${pics}`, [["cover", new Blob([large]), "big.png"]], alice.token);
    expect(big.status).toBe(201);
    const asked = MAX_THUMBS_WAITING + 8;
    const bigUrl = `/api/v1/files/${pics}/${big.body._id}/${big.body.cover}`;
    const burst = await Promise.all(Array.from({ length: asked }, (_, i) => get(`${bigUrl}?thumb=${i + 1}x0`, alice.token)));
    expect(burst.every((b) => b.status === 200)).toBe(true);
    // Those that found the queue full got the image as stored (not kept as a size); the others their size.
    const whole = burst.filter((b) => b.bytes.equals(Buffer.from(large)));
    expect(whole.length).toBeGreaterThan(0);
    expect(whole.length).toBeLessThan(asked);
    for (const [i, b] of burst.entries()) if (!b.bytes.equals(Buffer.from(large))) expect((await Jimp.read(b.bytes)).bitmap.width).toBe(i + 1);
    // Sizes kept per file are capped: once the file has them, a new size is the image as stored.
    for (let i = 1; i <= MAX_THUMB_SIZES + 1; i++) expect((await get(`${url}?thumb=${i}x0`, alice.token)).status).toBe(200);
    const sizes: string[] = [];
    for await (const f of storageOf(t.ctx).list(`${pics}/thumbs/${r.body.cover}/`)) sizes.push(f.key);
    expect(sizes).toHaveLength(MAX_THUMB_SIZES);
    const over = await get(`${url}?thumb=${MAX_THUMB_SIZES + 5}x0`, alice.token);
    expect(over.status).toBe(200);
    expect(over.bytes.equals(Buffer.from(png))).toBe(true);
    // A size already kept is still served.
    const kept = await Jimp.read((await get(`${url}?thumb=3x0`, alice.token)).bytes);
    expect([kept.bitmap.width, kept.bitmap.height]).toEqual([3, 2]);
  });

  test("the typed client uploads with create(data, { files }) and update(…, { files }), and builds file URLs with a token and a thumb", async () => {
    await t.ready;
    const client = createClient("http://localhost", { fetch: (u, init) => t.app.handle(new Request(u, init)) });
    await client.auth.login("alice@example.com", "password123");
    const rec = await client.collection<{ _id: string; title: string | null; cover: string | null; attachments: string[] | null }>("docs").create(
      { title: "from the client" },
      { files: { cover: new File([PNG_1x1], "c.png"), attachments: [new Blob(["x"]), new Blob(["y"])] } },
    );
    expect(rec.title).toBe("from the client");
    expect(rec.attachments).toHaveLength(2);
    const docs = client.collection<typeof rec>("docs");
    const updated = await docs.update(rec._id, {}, { files: { "attachments-": rec.attachments![0]!, "attachments+": new Blob(["z"]) } });
    expect(updated.attachments).toEqual([rec.attachments![1]!, expect.stringMatching(/_file$/)]);
    const token = await client.fileToken();
    const url = docs.fileUrl(updated, "cover", { token, thumb: "0x1" })!;
    expect(url).toBe(`http://localhost/api/v1/files/docs/${rec._id}/${rec.cover}?thumb=0x1&token=${token}`);
    const res = await t.app.handle(new Request(url));
    expect(res.status).toBe(200);
    expect(docs.fileUrl({ ...updated, cover: null }, "cover")).toBeNull();
  });

  test("soft delete hides the files until restore; hard delete removes them", async () => {
    const r = await send("POST", "/api/v1/docs", [["cover", new Blob([PNG_1x1]), "a.png"]], alice.token);
    const id = r.body._id;
    const url = `/api/v1/files/docs/${id}/${r.body.cover}`;
    expect((await t.req("DELETE", `/api/v1/docs/${id}`, { token: alice.token })).status).toBe(200);
    expect((await get(url, alice.token)).status).toBe(404);
    expect((await get(url)).status).toBe(404);
    expect(await storageFiles()).toContain(r.body.cover);
    expect((await t.req("POST", `/api/v1/docs/${id}/restore`, { token: alice.token })).status).toBe(200);
    expect((await get(url, alice.token)).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/docs/records/${id}`)).status).toBe(200);
    await fileDeletionsSettled(t.ctx);
    expect(await storageFiles()).not.toContain(r.body.cover);
  });

  test("a dropped collection's files and thumbnails are deleted after the drop; one made again under its name keeps its own", async () => {
    const keys = async (name: string) => {
      const all: string[] = [];
      for await (const f of storageOf(t.ctx).list(`${name}/`)) all.push(f.key);
      return all.sort();
    };
    const make = () => t.admin("POST", "/api/v1/admin/collections", { name: "albums", rules: { read: "public", create: "public" }, fields: [{ name: "pic", type: "file" }] });
    expect((await make()).status).toBe(201);
    const png = new Uint8Array(await encodeImage(new Jimp({ width: 4, height: 4, color: 0x3366ccff }), "image/png"));
    const before = await send("POST", "/api/v1/albums", [["pic", new Blob([png]), "a.png"]]);
    expect(before.status).toBe(201);
    expect((await get(`/api/v1/files/albums/${before.body._id}/${before.body.pic}?thumb=1x1`)).status).toBe(200);
    expect(await keys("albums")).toEqual([`albums/${before.body.pic}`, `albums/thumbs/${before.body.pic}/1x1`].sort());
    // A bucket tells a file's time to the second: the drop takes what is a second older than it.
    if (kind === "s3") await Bun.sleep(2100);
    expect((await t.admin("DELETE", "/api/v1/admin/collections/albums")).status).toBe(200);
    expect((await make()).status).toBe(201);
    const after = await send("POST", "/api/v1/albums", [["pic", new Blob([PNG_1x1]), "b.png"]]);
    expect(after.status).toBe(201);
    await fileDeletionsSettled(t.ctx);
    expect(await keys("albums")).toEqual([`albums/${after.body.pic}`]);
    expect((await get(`/api/v1/files/albums/${after.body._id}/${after.body.pic}`)).status).toBe(200);
  });
});
});
