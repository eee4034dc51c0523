import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_SECRET, createTestApp, registerUser } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";
import { createMailTestApp } from "../helpers/smtp.ts";

// Operations the CLI has, over the admin API: a backup download, the mail setup with a test
// mail, and secret rotation.

const { t, smtp, close } = await createMailTestApp({ MAIL_FROM: "ops@example.test" });
afterAll(close);

describe("GET /admin/backup", () => {
  // A download of the SQLite file: on PostgreSQL the endpoint names pg_dump instead (backup-postgres.test.ts).
  test.skipIf(onPostgres)("downloads a consistent copy of the database that opens with its records; nothing is left in the data directory", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "notes" });
    for (let i = 0; i < 5; i++) await t.admin("POST", "/api/v1/notes", { text: `note ${i}` });
    const before = readdirSync(t.dir).sort();
    const res = await t.app.handle(new Request("http://localhost/api/v1/admin/backup", { headers: { authorization: `Bearer ${ADMIN_SECRET}` } }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.sqlite3");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="baas-backup-\d{8}-\d{6}\.db"$/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBe(Number(res.headers.get("content-length")));
    expect(new TextDecoder().decode(bytes.slice(0, 15))).toBe("SQLite format 3");
    const dir = mkdtempSync(join(tmpdir(), "baas-backup-"));
    try {
      writeFileSync(join(dir, "copy.db"), bytes);
      const copy = new Database(join(dir, "copy.db"), { readonly: true });
      expect(copy.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM "notes"').get()!.n).toBe(5);
      copy.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(readdirSync(t.dir).sort()).toEqual(before);
  });

  test("needs admin credentials", async () => {
    expect((await t.req("GET", "/api/v1/admin/backup")).status).toBe(401);
    const u = await registerUser(t, "no-backup@example.test");
    expect((await t.req("GET", "/api/v1/admin/backup", { token: u.token })).status).toBe(403);
  });
});

describe("GET /admin/mail and POST /admin/mail/test", () => {
  test("shows how mail is sent without the SMTP credentials, and a test mail arrives", async () => {
    const status = await t.admin("GET", "/api/v1/admin/mail");
    const port = new URL(smtp.url).port;
    expect(status.body).toEqual({ transport: "smtp", smtp_server: `127.0.0.1:${port}`, from: "ops@example.test", sender_name: "baas" });
    const sent = await t.admin("POST", "/api/v1/admin/mail/test", { to: "Admin@Example.test" });
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({ ok: true, to: "admin@example.test", transport: "smtp" });
    const mail = smtp.to("admin@example.test").at(-1)!;
    expect(mail.subject).toBe("Test mail from baas");
    expect(mail.from).toBe("ops@example.test");
  });

  test("a bad address is 422, a missing one too; an SMTP server that refuses is 503 with its reason", async () => {
    expect((await t.admin("POST", "/api/v1/admin/mail/test", { to: "not-an-address" })).status).toBe(422);
    expect((await t.admin("POST", "/api/v1/admin/mail/test", {})).body).toEqual({ errors: [expect.objectContaining({ field: "to", rule: "required" })] });
    const down = createTestApp({ env: { SMTP_URL: "smtp://user:hunter2@127.0.0.1:1" } });
    try {
      expect((await down.admin("GET", "/api/v1/admin/mail")).body).toMatchObject({ transport: "smtp", smtp_server: "127.0.0.1:1" });
      expect((await down.admin("GET", "/api/v1/admin/mail")).text).not.toContain("hunter2");
      const res = await down.admin("POST", "/api/v1/admin/mail/test", { to: "x@example.test" });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: expect.stringMatching(/^the SMTP server did not take the mail: /), code: "unavailable" });
    } finally {
      await down.close();
    }
  });

  test("without SMTP_URL the test mail goes to the log", async () => {
    const plain = createTestApp();
    try {
      expect((await plain.admin("GET", "/api/v1/admin/mail")).body).toEqual({ transport: "log", smtp_server: null, from: "no-reply@localhost", sender_name: "baas" });
      expect((await plain.admin("POST", "/api/v1/admin/mail/test", { to: "x@example.test" })).body).toEqual({ ok: true, to: "x@example.test", transport: "log" });
      expect(plain.log.lines.some((l) => l.msg.startsWith("mail") && l.fields?.to === "x@example.test")).toBe(true);
    } finally {
      await plain.close();
    }
  });
});

describe("POST /admin/rotate-secret", () => {
  test("with ADMIN_SECRET set it refuses with 409 and the secret keeps working", async () => {
    const res = await t.admin("POST", "/api/v1/admin/rotate-secret");
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "the admin secret comes from ADMIN_SECRET: change it there and restart the server", code: "conflict" });
    expect((await t.admin("GET", "/api/v1/admin/collections")).status).toBe(200);
  });

  test("with a generated secret it answers a new one once; the old secret and admin tokens stop working", async () => {
    const gen = createTestApp({ env: { ADMIN_SECRET: "" } });
    try {
      // The first start generated a secret nobody here knows: make a known one through the CLI's own function.
      const { rotateAdminSecret } = await import("../../src/auth/admin.ts");
      await gen.ready;
      const first = await rotateAdminSecret(gen.ctx);
      const login = await gen.req("POST", "/api/v1/admin/login", { body: { secret: first } });
      expect(login.status).toBe(200);
      const token = login.body.token;
      const res = await gen.req("POST", "/api/v1/admin/rotate-secret", { headers: { "x-admin-token": token } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ secret: expect.stringMatching(/^baas_admin_/) });
      expect((await gen.req("GET", "/api/v1/admin/collections", { headers: { "x-admin-token": token } })).status).toBe(401);
      expect((await gen.req("GET", "/api/v1/admin/collections", { token: first })).status).toBe(401);
      expect((await gen.req("GET", "/api/v1/admin/collections", { token: res.body.secret })).status).toBe(200);
    } finally {
      await gen.close();
    }
  });
});
