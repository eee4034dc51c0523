import { afterAll, describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { createTestApp } from "../helpers/app.ts";

const t = createTestApp({ env: { PUBLIC_URL: "https://api.example.test/" } });
afterAll(() => t.close());

const get = (path: string, headers: Record<string, string> = {}) => t.app.handle(new Request(`http://localhost${path}`, { headers }));

async function assetPaths(): Promise<{ js: string; css: string }> {
  const html = await (await get("/_/")).text();
  return { js: /src="(\/_\/assets\/console\.[0-9a-f]{16}\.js)"/.exec(html)![1], css: /href="(\/_\/assets\/console\.[0-9a-f]{16}\.css)"/.exec(html)![1] };
}

describe("the console's files at /_/", () => {
  test("/_/ answers the index page, not cached without revalidation, with a strict CSP", async () => {
    const res = await get("/_/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{16}"$/);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();
    expect(html).toStartWith("<!doctype html>");
    expect(html).toContain('<meta name="baas-public-url" content="https://api.example.test">');
  });

  test("/_ redirects to /_/", async () => {
    const res = await get("/_");
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("/_/");
  });

  test("a deep link under /_/ answers the index page too", async () => {
    const res = await get("/_/collections/posts");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  });

  test("the index answers 304 to a matching If-None-Match", async () => {
    const etag = (await get("/_/")).headers.get("etag")!;
    const res = await get("/_/", { "if-none-match": etag });
    expect(res.status).toBe(304);
    expect(await res.text()).toBe("");
  });

  test("the hashed script and stylesheet are served with their types and cached forever", async () => {
    const { js, css } = await assetPaths();
    const jsRes = await get(js);
    expect(jsRes.status).toBe(200);
    expect(jsRes.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(jsRes.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await jsRes.text()).toContain("/admin/login");
    const cssRes = await get(css);
    expect(cssRes.status).toBe(200);
    expect(cssRes.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await cssRes.text()).toContain(".topbar");
  });

  test("assets are gzipped for clients that accept it", async () => {
    const { js } = await assetPaths();
    const plain = await (await get(js)).text();
    const res = await get(js, { "accept-encoding": "gzip, deflate, br" });
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("vary")).toBe("Accept-Encoding");
    const body = new Uint8Array(await res.arrayBuffer());
    expect(Number(res.headers.get("content-length"))).toBe(body.length);
    expect(body.length).toBeLessThan(plain.length / 2);
    expect(gunzipSync(body).toString()).toBe(plain);
  });

  test("an unknown asset is a JSON 404", async () => {
    const res = await get("/_/assets/console.0000000000000000.js");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "no such console file", code: "not_found" });
  });

  test("the console needs no credentials to load, and the admin API still does", async () => {
    expect((await get("/_/")).status).toBe(200);
    const res = await t.req("GET", "/api/v1/admin/collections");
    expect(res.status).toBe(401);
  });
});
