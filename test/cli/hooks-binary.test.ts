import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

const hooksDir = mkdtempSync(join(tmpdir(), "baas-binhooks-"));
writeFileSync(join(hooksDir, "_shout.ts"), `export const shout = (s: string): string => s.toUpperCase() + "!";\n`);
writeFileSync(
  join(hooksDir, "posts.ts"),
  `import { shout } from "./_shout.ts";
interface Event { data: Record<string, unknown> | null }
export default {
  collection: "posts",
  beforeCreate(e: Event): void {
    if (e.data!.title === "nope") throw new Error("no nope posts");
    e.data!.loud = shout(String(e.data!.title));
  },
};
`,
);

// Routes (CONTRACT §15) in a file of their own: a signed callback that writes through tx.
writeFileSync(
  join(hooksDir, "payments.ts"),
  `import { createHmac } from "node:crypto";
import { shout } from "./_shout.ts";
interface Args { rawBody: string; body: any; request: Request; params: Record<string, string>; tx: any }
export const routes = [
  { method: "GET", path: "/shout/:word", handler: ({ params }: Args) => ({ said: shout(params.word) }) },
  {
    method: "POST",
    path: "/paid",
    handler: async ({ rawBody, body, request, tx }: Args) => {
      const want = createHmac("sha256", "s3cret").update(rawBody).digest("hex");
      if (request.headers.get("x-signature") !== want) throw { status: 401, message: "bad signature", code: "invalid_signature" };
      return await tx.create("posts", { title: "paid " + body.order });
    },
  },
];
`,
);

let bin: string;
let srv: ServerProcess;
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${srv.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

beforeAll(async () => {
  bin = await buildBinary();
  srv = await spawnServer({ cmd: [bin], env: { HOOKS_DIR: hooksDir } });
  // The collection the hooks and the routes write (the tests run in any order).
  expect((await call("POST", "/admin/collections", { name: "posts" })).status).toBe(201);
}, 180_000);
afterAll(async () => {
  await srv?.cleanup();
  rmSync(hooksDir, { recursive: true, force: true });
});

describe("the compiled binary loads TypeScript hook files from HOOKS_DIR", () => {
  test("a .ts hook (with a relative import) mutates and rejects records", async () => {
    const ok = await call("POST", "/posts", { title: "hello" });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ title: "hello", loud: "HELLO!" });
    const bad = await call("POST", "/posts/bulk", [{ title: "fine" }, { title: "nope" }]);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: "no nope posts", code: "hook_rejected", index: 1 });
  });

  test("routes of a .ts hook file are served under /api/v1/fn/, with tx and the raw body", async () => {
    const shouted = await call("GET", "/fn/shout/hey");
    expect(shouted).toEqual({ status: 200, body: { said: "HEY!" } });
    const raw = '{"order":"o-1"}';
    const sig = new Bun.CryptoHasher("sha256", "s3cret").update(raw).digest("hex");
    const post = (signature: string) =>
      fetch(`${srv.url}/api/v1/fn/paid`, { method: "POST", headers: { "content-type": "application/json", "x-signature": signature }, body: raw }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as any,
      }));
    expect(await post("forged")).toEqual({ status: 401, body: { error: "bad signature", code: "invalid_signature" } });
    const ok = await post(sig);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ title: "paid o-1", loud: "PAID O-1!" });
  });

  test("field-rule regexes run in the binary too (the RE2 engine is bundled into it)", async () => {
    expect((await call("POST", "/admin/collections", { name: "codes" })).status).toBe(201);
    expect((await call("PUT", "/admin/collections/codes/rules", { field_rules: [{ field: "code", regex: "^[A-Z]+$" }] })).status).toBe(200);
    const bad = await call("POST", "/codes", { code: "abc" });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ errors: [{ field: "code", rule: "regex", message: '"code" must match the pattern ^[A-Z]+$.' }] });
    expect((await call("POST", "/codes", { code: "ABC" })).status).toBe(201);
  });

  test("a hook file that does not load stops the start with exit 1 and names the file", async () => {
    const badDir = mkdtempSync(join(tmpdir(), "baas-binbad-"));
    const dataDir = mkdtempSync(join(tmpdir(), "baas-bindata-"));
    try {
      writeFileSync(join(badDir, "broken.ts"), "export default { collection: ");
      const proc = Bun.spawn([bin, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dataDir], {
        env: { ...process.env, ADMIN_SECRET, HOOKS_DIR: badDir },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).toBe(1);
      expect(stderr).toContain("broken.ts");
    } finally {
      rmSync(badDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("the compiled binary makes thumbnails on a thread of its own", () => {
  test("a thumbnail of an uploaded PNG has its exact size, and the server never falls back to its own thread", async () => {
    const { Images } = await import("../../src/files/images.ts");
    expect((await call("POST", "/admin/collections", { name: "pics", rules: { read: "public", create: "public" }, fields: [{ name: "pic", type: "file" }] })).status).toBe(201);
    const png = await new Images({ width: 40, height: 30, color: 0x3366ccff }).getBuffer("image/png");
    const form = new FormData();
    form.append("pic", new Blob([new Uint8Array(png)]), "p.png");
    const made = await fetch(`${srv.url}/api/v1/pics`, { method: "POST", body: form, headers: { authorization: `Bearer ${ADMIN_SECRET}` } });
    expect(made.status).toBe(201);
    const rec = (await made.json()) as { _id: string; pic: string };
    const thumb = await fetch(`${srv.url}/api/v1/files/pics/${rec._id}/${rec.pic}?thumb=10x5`);
    expect(thumb.status).toBe(200);
    const img = await Images.read(Buffer.from(await thumb.arrayBuffer()));
    expect([img.bitmap.width, img.bitmap.height]).toEqual([10, 5]);
    // The worker's module is an entry point of the build (package.json): a binary without it warns and decodes inline.
    expect(srv.stderr()).not.toContain("the image thread could not start");
  });
});
