import { Elysia, t } from "elysia";
import type { AppContext } from "../../context.ts";
import { serveFile } from "../../records/download.ts";
import { issueFileToken, principalOfFileToken } from "../../files/tokens.ts";
import { doc } from "../doc.ts";
import { principalOf } from "../request.ts";

const tag = "files";

/** Files (CONTRACT §14): downloads under the record's read rule, and the short-lived tokens `<img src>` carries. */
export function fileRoutes(ctx: AppContext) {
  return new Elysia({ prefix: "/api/v1/files" })
    .post(
      "/token",
      async ({ request }) => issueFileToken(ctx, await principalOf(ctx, request)),
      doc({ summary: "A file token (valid 2 minutes) for ?token= on file URLs", tag, access: "user", ok: t.Object({ token: t.String() }) }),
    )
    .get(
      "/:collection/:id/:name",
      async ({ request, params, set }) => {
        // The answer differs by Origin only (the CORS headers name it): `Vary: *`, which the CORS plugin sets for
        // any origin, would keep a browser from storing the file at all, so every <img> would load it whole again
        // instead of asking with If-None-Match (304).
        set.headers.vary = "Origin";
        const url = request.url;
        const q = new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");
        const token = q.get("token");
        const p = token ? await principalOfFileToken(ctx, token) : await principalOf(ctx, request);
        return serveFile(ctx, request, params.collection, params.id, decodeURIComponent(params.name), p, q);
      },
      doc({
        summary: "Download a file of a record (under its read rule)",
        description:
          "Query: `token` (a file token, for `<img src>`), `thumb=WxH` (PNG, JPEG, WebP, GIF: `100x100` crops to fill, `0x300`/`300x0` keep the ratio; sides ≤ 2000), `download=1` (always an attachment). Range requests (206) and If-None-Match (304) are answered.",
        tag,
        access: "data",
        ok: t.Any(),
        media: "application/octet-stream",
        alsoOk: [206, 304],
        errors: [400, 416],
      }),
    );
}
