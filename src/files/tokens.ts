import { ADMIN, type Principal } from "../principal.ts";
import { userPrincipal } from "../auth/principal.ts";
import { userAccessRow } from "../tables/users.ts";
import { liveApiKeyOfUser } from "../tables/api-keys.ts";
import { signJwt } from "../auth/jwt.ts";
import { jwtKey } from "../auth/keys.ts";
import { activeSession } from "../auth/sessions.ts";
import type { AppContext } from "../context.ts";
import { hmacSha256, safeEqual } from "../crypto.ts";
import { unauthorized } from "../errors.ts";

// File tokens (CONTRACT §14): `<img src>` cannot send an Authorization header, so a signed-in caller gets a
// token valid 2 minutes that a file URL carries as `?token=`. IMPORTANT: they are signed with a key of their
// own (derived from the server's), so a file token is never accepted as an access token, nor the reverse.

/** How long a file token is valid (CONTRACT §14). */
export const FILE_TOKEN_TTL_S = 120;

async function fileKeyOf(ctx: AppContext): Promise<string> {
  return hmacSha256(await jwtKey(ctx), "baas file tokens");
}

/** `POST /files/token`: a token standing for `p` on file downloads; 401 for anonymous callers. */
export async function issueFileToken(ctx: AppContext, p: Principal): Promise<{ token: string }> {
  if (p.kind === "anonymous") throw unauthorized("a file token needs a signed-in caller");
  const exp = Math.floor(ctx.clock.now() / 1000) + FILE_TOKEN_TTL_S;
  const claims =
    p.kind === "admin"
      ? { typ: "file", adm: true, exp }
      : p.apiKeyId !== undefined
        ? { typ: "file", sub: p.userId, kid: p.apiKeyId, exp }
        : { typ: "file", sub: p.userId, sid: p.sessionId, exp };
  return { token: signJwt(await fileKeyOf(ctx), claims) };
}

const invalid = () => unauthorized("invalid or expired file token");

/** The caller a file token stands for; 401 when it is not one of ours, has expired, or its session was revoked. */
export async function principalOfFileToken(ctx: AppContext, token: string): Promise<Principal> {
  const key = await fileKeyOf(ctx);
  const c = verifiedClaims(key, token);
  if (!c || c.typ !== "file" || typeof c.exp !== "number" || c.exp * 1000 <= ctx.clock.now()) throw invalid();
  if (c.adm === true) return ADMIN;
  if (typeof c.sub !== "string") throw invalid();
  // The user as stored now (roles, metadata: CONTRACT §12), and the session or API key it was made with still live.
  if (typeof c.kid === "string") {
    const key = await liveApiKeyOfUser(ctx.db, c.kid, c.sub);
    if (!key) throw invalid();
    return userPrincipal(c.sub, key, null, "api_key", key.id);
  }
  const sid = typeof c.sid === "string" ? c.sid : null;
  const user = sid ? await activeSession(ctx, sid, c.sub) : await userAccessRow(ctx.db, c.sub);
  if (!user) throw invalid();
  return userPrincipal(c.sub, user, sid, "token");
}

/**
 * The claims of a token signed with `key`, or null. Checked here, not through the access tokens' cache of
 * verified tokens, which holds tokens of one key: file downloads would empty it for every API request.
 */
function verifiedClaims(key: string, token: string): Record<string, unknown> | null {
  const parts = token.split(".");
  if (parts.length !== 3 || token.length > 4096) return null;
  // IMPORTANT: constant-time compare, else a valid signature can be found byte by byte.
  if (!safeEqual(hmacSha256(key, `${parts[0]}.${parts[1]}`), parts[2]!)) return null;
  try {
    const c = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8"));
    return c && typeof c === "object" && !Array.isArray(c) ? c : null;
  } catch {
    return null;
  }
}
