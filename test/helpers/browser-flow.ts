import type { TestApp } from "./app.ts";

/** A tiny per-host cookie jar, enough to carry state and provider sessions across redirects. */
export class CookieJar {
  private hosts = new Map<string, Map<string, string>>();

  /** The Cookie header for a URL's host. */
  header(url: URL): string {
    const jar = this.hosts.get(url.host);
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join("; ") : "";
  }

  /** Takes every Set-Cookie of a response; Max-Age=0 or an empty value deletes. */
  store(url: URL, res: Response): void {
    let jar = this.hosts.get(url.host);
    if (!jar) this.hosts.set(url.host, (jar = new Map()));
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const i = pair!.indexOf("=");
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=thu, 01 jan 1970/i.test(a));
      if (expired || !value) jar.delete(name);
      else jar.set(name, value);
    }
  }

  get(host: string, name: string): string | undefined {
    return this.hosts.get(host)?.get(name);
  }

  delete(host: string, name: string): void {
    this.hosts.get(host)?.delete(name);
  }
}

export interface FlowResult {
  /** The final `{APP_URL}/auth/callback` address reached. */
  url: URL;
  params: Record<string, string>;
  /** Every address visited, in order. */
  hops: string[];
}

/**
 * Walks a browser's path from `startPath` on the app: every 3xx Location is followed by
 * hand, cookies carried per host, app requests go through `app.handle`, other hosts
 * through fetch, until the browser lands on `{appUrl}/auth/callback`. `beforeHop` may
 * rewrite a URL before it is visited (to forge or tamper).
 */
export async function runBrowserFlow(
  t: TestApp,
  startPath: string,
  opts: { jar?: CookieJar; beforeHop?: (url: URL) => URL | void } = {},
): Promise<FlowResult> {
  const jar = opts.jar ?? new CookieJar();
  const appOrigin = new URL(t.config.publicUrl).origin;
  const landing = `${t.config.appUrl}/auth/callback`;
  let url = new URL(startPath, t.config.publicUrl);
  const hops: string[] = [];
  for (let i = 0; i < 25; i++) {
    url = opts.beforeHop?.(url) ?? url;
    hops.push(url.toString());
    if (`${url.origin}${url.pathname}` === landing) return { url, params: Object.fromEntries(url.searchParams), hops };
    const headers: Record<string, string> = {};
    const cookie = jar.header(url);
    if (cookie) headers.cookie = cookie;
    const res =
      url.origin === appOrigin
        ? await t.app.handle(new Request(url, { headers }))
        : await fetch(url, { headers, redirect: "manual" });
    jar.store(url, res);
    const location = res.headers.get("location");
    const body = await res.text();
    if (res.status < 300 || res.status >= 400 || !location) throw new Error(`${url} answered ${res.status} without a redirect: ${body.slice(0, 300)}`);
    url = new URL(location, url);
  }
  throw new Error(`too many redirects: ${hops.join(" -> ")}`);
}
