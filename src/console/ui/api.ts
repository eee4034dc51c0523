/** The console's only way to the server: fetch against /api/v1 with the admin token from sessionStorage. */

const TOKEN_KEY = "baas.admin.token";
const EXPIRES_KEY = "baas.admin.expires";

/** An API failure, carrying the server's `error` message (or the 422 messages). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors: { field?: string; rule?: string; message: string }[] = [],
    /** The whole error body, for keys beyond the message (a 409's `count`). */
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

/** The admin token, or null when absent or expired. Only the token is kept, never the secret. */
export function getToken(): string | null {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const exp = Number(sessionStorage.getItem(EXPIRES_KEY) ?? 0);
  if (!token || Date.now() >= exp) return null;
  return token;
}

/** Stores an admin token for this browser tab. */
export function setToken(token: string, expiresIn: number): void {
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(EXPIRES_KEY, String(Date.now() + expiresIn * 1000));
}

/** Forgets the admin token. */
export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(EXPIRES_KEY);
}

let onUnauthorized: (message: string) => void = () => {};
/** Called when the server rejects the admin token (expired, or the secret was rotated). */
export function setUnauthorizedHandler(fn: (message: string) => void): void {
  onUnauthorized = fn;
}

/** Calls the API (path relative to /api/v1); resolves to the parsed body, rejects with ApiError. */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const token = getToken();
  if (token) headers["x-admin-token"] = token;
  // A FormData body (files) goes as multipart/form-data with the boundary fetch sets.
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}`, { method, headers, body: body === undefined ? undefined : form ? body : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, "network", `cannot reach the server (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (res.ok) return data as T;
  const errors = Array.isArray(data?.errors) ? data.errors : [];
  const message =
    typeof data?.error === "string"
      ? data.error
      : errors.length
        ? errors.map((e: { message?: string }) => e.message ?? String(e)).join(" ")
        : `HTTP ${res.status} ${res.statusText}`.trim();
  const err = new ApiError(res.status, typeof data?.code === "string" ? data.code : res.status === 422 ? "validation" : "http_error", message, errors, data && typeof data === "object" ? data : null);
  if (res.status === 401 && token && !path.startsWith("/admin/login")) {
    clearToken();
    onUnauthorized(message);
  }
  throw err;
}

/** Downloads a file from the API (path relative to /api/v1) with the admin token; rejects with ApiError. */
export async function apiDownload(path: string): Promise<{ blob: Blob; filename: string }> {
  const token = getToken();
  const res = await fetch(`/api/v1${path}`, { headers: token ? { "x-admin-token": token } : {} });
  if (!res.ok) {
    const data = await res.json().catch(() => null);
    throw new ApiError(res.status, data?.code ?? "http_error", data?.error ?? `HTTP ${res.status}`);
  }
  const filename = /filename="([^"]+)"/.exec(res.headers.get("content-disposition") ?? "")?.[1] ?? "download";
  return { blob: await res.blob(), filename };
}

/** Encodes a path segment. */
export const seg = (s: string) => encodeURIComponent(s);
