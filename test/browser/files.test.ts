import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { Images } from "../../src/files/images.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { launchBrowser, TEST_MS } from "../helpers/browser.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// Files in a real browser (CONTRACT §14): an uploaded image shows through `<img src>` with a file token, and
// uploads that try to run script in the server's origin (HTML, SVG with script, a "PNG" whose bytes are HTML)
// never run it, whether opened directly, framed or used as an image.

setDefaultTimeout(TEST_MS);

let server: ServerProcess;
let browser: Browser;
let token: string;

/** Every attempt marks itself here: a request to this path (any origin) or this console line means a script ran. */
const BEACON = "/xss-beacon";
const payload = (tag: string) =>
  `<script>console.log("XSS-RAN ${tag}");fetch(${JSON.stringify(BEACON)}+"?${tag}")</script><img src=x onerror="console.log('XSS-RAN ${tag} onerror')">`;

beforeAll(async () => {
  server = await spawnServer();
  browser = await launchBrowser();
  const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };
  const made = await fetch(`${server.url}/api/v1/admin/collections`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ name: "media", rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" }, fields: [{ name: "f", type: "file", max_count: 5 }] }),
  });
  expect(made.status).toBe(201);
  const reg = await fetch(`${server.url}/api/v1/auth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "u@example.com", password: "password123" }) });
  token = (await reg.json()).access_token;
}, 180_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.cleanup();
});

test("an image shows through <img src> with a file token; HTML, SVG with script and a PNG of HTML never run script", async () => {
  const png = await new Images({ width: 40, height: 30, color: 0x22aa44ff }).getBuffer("image/png");
  const form = new FormData();
  form.append("f", new Blob([new Uint8Array(png)], { type: "image/png" }), "ok.png");
  form.append("f", new Blob([`<!doctype html><html><body>${payload("html")}</body></html>`], { type: "text/html" }), "x.html");
  form.append("f", new Blob([`<svg xmlns="http://www.w3.org/2000/svg" onload="console.log('XSS-RAN svg onload')">${payload("svg").replace("<img src=x", "<image href=x")}</svg>`], { type: "image/svg+xml" }), "x.svg");
  form.append("f", new Blob([payload("png")], { type: "image/png" }), "fake.png");
  const up = await fetch(`${server.url}/api/v1/media`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } });
  expect(up.status).toBe(201);
  const rec = await up.json();
  const [image, html, svg, fake] = rec.f as string[];
  const ft = (await (await fetch(`${server.url}/api/v1/files/token`, { method: "POST", headers: { authorization: `Bearer ${token}` } })).json()).token;
  const url = (name: string, q = "") => `${server.url}/api/v1/files/media/${rec._id}/${name}?token=${ft}${q}`;

  const page = await browser.newPage();
  const ran: string[] = [];
  page.on("console", (m) => m.text().includes("XSS-RAN") && ran.push(m.text()));
  page.on("request", (r) => new URL(r.url()).pathname === BEACON && ran.push(r.url()));
  page.on("download", (d) => void d.cancel().catch(() => {}));
  // A page of the server's own origin (the health answer), so nothing is blocked as cross-origin.
  await page.goto(`${server.url}/health`);
  const shown = await page.evaluate(
    async ([ok, bad]) => {
      const load = (src: string) =>
        new Promise<{ w: number; h: number; ok: boolean }>((resolve) => {
          const img = document.createElement("img");
          img.onload = () => resolve({ w: img.naturalWidth, h: img.naturalHeight, ok: true });
          img.onerror = () => resolve({ w: 0, h: 0, ok: false });
          img.src = src;
          document.body.append(img);
        });
      return { ok: await load(ok!), noToken: await load(ok!.replace(/\?token=[^&]*/, "")), thumb: await load(`${ok}&thumb=20x20`), bad: await Promise.all(bad!.map(load)) };
    },
    [url(image!), [url(html!), url(svg!), url(fake!)]] as const,
  );
  expect(shown.ok).toEqual({ w: 40, h: 30, ok: true });
  expect(shown.thumb).toEqual({ w: 20, h: 20, ok: true });
  // Without the token the read rule (owner) hides it.
  expect(shown.noToken.ok).toBe(false);
  // Framed and opened directly: attachments (downloads) under a sandboxing CSP; no script runs.
  await page.evaluate(
    (srcs) =>
      Promise.all(
        srcs.map(
          (src) =>
            new Promise<void>((resolve) => {
              const f = document.createElement("iframe");
              f.onload = () => resolve();
              setTimeout(resolve, 2000);
              f.src = src;
              document.body.append(f);
            }),
        ),
      ),
    [url(html!), url(svg!), url(fake!), url(image!, "&download=0"), url(svg!, "&thumb=10x10")],
  );
  for (const name of [html!, svg!, fake!]) {
    const direct = await browser.newPage();
    direct.on("console", (m) => m.text().includes("XSS-RAN") && ran.push(m.text()));
    direct.on("request", (r) => new URL(r.url()).pathname === BEACON && ran.push(r.url()));
    direct.on("download", (d) => void d.cancel().catch(() => {}));
    const res = await direct.goto(url(name), { waitUntil: "load" }).catch(() => null);
    if (res) expect(res.headers()["content-disposition"]).toStartWith("attachment");
    await direct.close();
  }
  // The types the server decided, whatever the client said.
  const types = await Promise.all([html, svg, fake].map(async (n) => (await fetch(url(n!))).headers.get("content-type")));
  expect(types).toEqual(["text/html", "image/svg+xml", "text/html"]);
  expect(ran).toEqual([]);
  await page.close();
});
