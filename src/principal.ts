// Who makes a request: resolved once per request from its credentials (auth/principal.ts) and handed to every
// service. Low in the layers (it imports nothing) because rules, queries, hooks and events all name it.

/** Who is making a request. */
export type Principal =
  | { kind: "anonymous" }
  | { kind: "admin" }
  | {
      kind: "user";
      userId: string;
      roles: string[];
      /** null for admin impersonation tokens, which carry no `sid`. */
      sessionId: string | null;
      via: "token" | "api_key";
      apiKeyId?: string;
    };

export const ANONYMOUS: Principal = { kind: "anonymous" };
export const ADMIN: Principal = { kind: "admin" };
