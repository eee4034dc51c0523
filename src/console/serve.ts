import type { ConsoleBundle } from "./bundle.ts";

/** The console's URL prefix. */
export const CONSOLE_PATH = "/_/";

export interface Asset {
  body: Uint8Array<ArrayBuffer>;
  /** Compressed on first use, so start-up does no compression work. */
  gzip?: Uint8Array<ArrayBuffer>;
  type: string;
  cache: string;
  etag: string;
}

const IMMUTABLE = "public, max-age=31536000, immutable";

// The console talks only to its own origin and runs only its own script: a strict policy costs nothing.
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function escapeAttr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function makeAsset(text: string, type: string, cache: string, etag: string): Asset {
  return { body: new TextEncoder().encode(text), type, cache, etag: `"${etag}"` };
}

/** The console's files for one server: index.html (carrying PUBLIC_URL) and the hashed script and stylesheet. */
export function buildConsoleAssets(bundle: ConsoleBundle, publicUrl: string): Map<string, Asset> {
  const { js, css, hash } = bundle;
  const jsName = `assets/console.${hash}.js`;
  const cssName = `assets/console.${hash}.css`;
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<meta name="baas-public-url" content="${escapeAttr(publicUrl)}">` +
    `<title>baas console</title><link rel="icon" href="data:,">` +
    `<link rel="stylesheet" href="${CONSOLE_PATH}${cssName}"></head>` +
    `<body><div id="app"><p class="boot">Loading the console…</p></div>` +
    `<script type="module" src="${CONSOLE_PATH}${jsName}"></script></body></html>`;
  const indexTag = new Bun.CryptoHasher("sha256").update(html).digest("hex").slice(0, 16);
  return new Map([
    ["", makeAsset(html, "text/html; charset=utf-8", "no-cache", indexTag)],
    [jsName, makeAsset(js, "text/javascript; charset=utf-8", IMMUTABLE, hash)],
    [cssName, makeAsset(css, "text/css; charset=utf-8", IMMUTABLE, hash)],
  ]);
}

/**
 * Answers a GET under /_/: hashed assets are immutable, everything else is the index
 * (no-cache, revalidated by ETag), so deep links work. null for an unknown asset.
 */
export function serveConsoleFile(assets: Map<string, Asset>, rest: string, request: Request): Response | null {
  const key = rest.startsWith("assets/") ? rest : "";
  const asset = assets.get(key);
  if (!asset) return null;
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS,
    "content-type": asset.type,
    "cache-control": asset.cache,
    etag: asset.etag,
    vary: "Accept-Encoding",
  };
  const inm = request.headers.get("if-none-match");
  if (inm && inm.split(",").some((t) => t.trim().replace(/^W\//, "") === asset.etag)) {
    return new Response(null, { status: 304, headers });
  }
  let body = asset.body;
  if (asset.body.length > 1024 && /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "")) {
    body = asset.gzip ??= Bun.gzipSync(asset.body, { level: 9 });
    headers["content-encoding"] = "gzip";
  }
  headers["content-length"] = String(body.length);
  return new Response(body, { status: 200, headers });
}
