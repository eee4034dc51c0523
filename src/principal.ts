// Who makes a request: resolved once per request from its credentials (auth/principal.ts) and handed to every
// service. Low in the layers (it imports nothing) because rules, queries, hooks and events all name it.

/** Who is making a request. */
export type Principal =
  | { kind: "anonymous" }
  | { kind: "admin" }
  | {
      kind: "user";
      userId: string;
      /** The user's roles as stored when the request began (CONTRACT §12: rules never trust the token's copy). */
      roles: string[];
      /** The user's metadata as stored when the request began (read-only: shared between requests). */
      metadata: Readonly<Record<string, unknown>>;
      /** The user's address and whether it is confirmed, as stored when the request began. */
      email: string;
      verified: boolean;
      /** null for admin impersonation tokens, which carry no `sid`. */
      sessionId: string | null;
      via: "token" | "api_key";
      apiKeyId?: string;
    };

export const ANONYMOUS: Principal = { kind: "anonymous" };
export const ADMIN: Principal = { kind: "admin" };
