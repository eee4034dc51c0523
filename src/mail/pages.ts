import type { MailKind } from "./templates.ts";

// The small pages mail links (and the end of an OAuth login) open when no frontend is configured
// (APP_URL is the server itself). Each is one self-contained document: the style and script are
// inline and allowed by their hashes in the Content-Security-Policy, so nothing else loads or runs.
// Tokens never enter the HTML: the script reads them from the address and sends them to the JSON
// API, so a link scanner that only fetches the page consumes nothing, and every text the script
// shows goes through textContent.

/** A mail link's page, or `oauth_callback`: the page an OAuth login ends on (`/auth/callback`). */
export type PageKind = MailKind | "oauth_callback";

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2430; --muted: #5b6472; --bg: #f5f6f8; --card: #fff; --line: #d9dde3; --accent: #2f5bd3; --ok: #19733c; --bad: #b42318; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ec; --muted: #a3abb8; --bg: #14171c; --card: #1c2027; --line: #323844; --accent: #7f9dff; --ok: #5fd08a; --bad: #ff8a80; } }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: var(--bg); color: var(--fg); font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { width: min(420px, calc(100vw - 32px)); background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 28px; }
.app { margin: 0 0 4px; color: var(--muted); font-size: 14px; }
h1 { margin: 0 0 16px; font-size: 22px; }
p { margin: 0 0 12px; }
label { display: block; margin: 12px 0 4px; font-weight: 600; font-size: 14px; }
input { width: 100%; padding: 9px 11px; border: 1px solid var(--line); border-radius: 8px; background: transparent; color: inherit; font: inherit; }
button { margin-top: 16px; width: 100%; padding: 10px; border: 0; border-radius: 8px; background: var(--accent); color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
button:disabled { opacity: .6; cursor: progress; }
.ok { color: var(--ok); font-weight: 600; }
.error { color: var(--bad); }
[hidden] { display: none !important; }
`;

const SCRIPT = `
(function () {
  "use strict";
  var body = document.body;
  var page = body.getAttribute("data-page");
  var api = body.getAttribute("data-api");
  var params = new URLSearchParams(location.search);
  var token = params.get("token") || "";
  // Tokens stay in memory only: they leave the address bar and the history entry.
  if (history.replaceState) history.replaceState(null, "", location.pathname);
  function el(id) { return document.getElementById(id); }
  function show(id) {
    var all = document.querySelectorAll("[data-step]");
    for (var i = 0; i < all.length; i++) all[i].hidden = all[i].id !== id;
  }
  function fail(text) { el("error-text").textContent = text; show("error"); }
  function messageOf(r) {
    var d = r.data;
    if (d && d.code === "invalid_token")
      return page === "oauth_callback"
        ? "This sign-in has expired or was already used. Please start it again."
        : "This link is invalid, has expired or was already used. Ask for a new one.";
    if (d && Array.isArray(d.errors)) return d.errors.map(function (e) { return String(e.message); }).join(" ");
    if (d && typeof d.error === "string") return d.error;
    return "Something went wrong (HTTP " + r.status + "). Please try again.";
  }
  function call(method, path, payload, bearer) {
    var headers = { accept: "application/json" };
    if (payload) headers["content-type"] = "application/json";
    if (bearer) headers.authorization = "Bearer " + bearer;
    return fetch(api + path, {
      method: method,
      headers: headers,
      body: payload ? JSON.stringify(payload) : undefined,
      credentials: "omit",
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) { return { ok: res.ok, status: res.status, data: data }; });
    }, function () { return { ok: false, status: 0, data: { error: "The server cannot be reached. Check your connection and try again." } }; });
  }
  function post(path, payload) { return call("POST", path, payload); }
  function signedIn(user) { el("signed-in-email").textContent = user && user.email ? user.email : ""; show("done"); }
  // The second step of a 2FA user's sign-in: a code for the totp_token, then the signed-in state.
  function askCode(totpToken) {
    var form = el("totp-form"), code = el("code"), submit = form.querySelector("button");
    show("totp-form");
    code.focus();
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      submit.disabled = true;
      post("/auth/2fa/verify", { totp_token: totpToken, code: code.value.trim() }).then(function (v) {
        submit.disabled = false;
        if (v.ok) return signedIn(v.data.user);
        if (v.data && v.data.code === "invalid_code") { el("totp-error").textContent = "That code is not right. Try the current one."; return; }
        fail(messageOf(v));
      });
    });
  }
  // What each error= of an OAuth login means to the person who tried it.
  var OAUTH_ERRORS = {
    invalid_state: "This sign-in expired or was started in another browser or tab. Please start it again.",
    method_disabled: "Signing in with another account is turned off here.",
    provider_error: "The sign-in was cancelled or refused at the provider, or could not be completed. Please try again.",
    no_email: "Your account at the provider gave no email address. Add one there (or make it visible), then try again.",
    email_not_verified: "Your email address is not verified at the provider. Verify it there, then try again.",
    registration_closed: "There is no account with this email address, and new sign-ups are closed.",
  };
  if (page === "oauth_callback") {
    var error = params.get("error"), access = params.get("access_token"), totpToken = params.get("totp_token");
    if (error !== null)
      return fail(Object.prototype.hasOwnProperty.call(OAUTH_ERRORS, error) ? OAUTH_ERRORS[error] : "The sign-in did not work. Please start it again.");
    if (params.get("totp_required") === "true" && totpToken) return askCode(totpToken);
    if (!access) return fail("This page has no sign-in result. Start the sign-in again.");
    return call("GET", "/auth/me", null, access).then(function (r) {
      if (!r.ok) return fail(r.status === 401 ? "This sign-in has expired. Please start it again." : messageOf(r));
      signedIn(r.data);
    });
  }
  if (!token) return fail("This link has no token. Open the link from the mail again, or ask for a new one.");

  if (page === "verify_email") {
    post("/auth/verify-email", { token: token }).then(function (r) {
      if (!r.ok) return fail(messageOf(r));
      el("verified-email").textContent = r.data.user.email;
      show("done");
    });
  } else if (page === "magic_link") {
    post("/auth/magic-link/verify", { token: token }).then(function (r) {
      if (!r.ok) return fail(messageOf(r));
      if (!r.data.totp_required) return signedIn(r.data.user);
      askCode(r.data.totp_token);
    });
  } else if (page === "reset_password") {
    var form = el("reset-form"), pw = el("password"), again = el("password2"), submit = form.querySelector("button");
    show("form");
    pw.focus();
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      el("form-error").textContent = "";
      if (pw.value !== again.value) { el("form-error").textContent = "The two passwords differ."; return; }
      submit.disabled = true;
      post("/auth/reset-password", { token: token, password: pw.value }).then(function (r) {
        submit.disabled = false;
        if (r.ok) { el("revoked").textContent = String(r.data.sessions_revoked); show("done"); return; }
        if (r.status === 422) { el("form-error").textContent = messageOf(r); return; }
        fail(messageOf(r));
      });
    });
  }
})();
`;

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const sha256 = (text: string) => `'sha256-${new Bun.CryptoHasher("sha256").update(text).digest("base64")}'`;

/** Headers of every landing page: only its own inline style and script run, it talks only to this origin. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": `default-src 'none'; script-src ${sha256(SCRIPT)}; style-src ${sha256(STYLE)}; img-src data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`,
  // The address carries a single-use token: never send it on, never keep the page.
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

const TITLES: Record<PageKind, string> = {
  verify_email: "Verify your email",
  magic_link: "Sign in",
  reset_password: "Choose a new password",
  oauth_callback: "Sign in",
};

function steps(kind: PageKind): string {
  const working = kind === "reset_password" ? "" : `<p id="working" data-step>One moment…</p>`;
  const error = `<div id="error" data-step hidden><p class="error" id="error-text" role="alert"></p></div>`;
  if (kind === "verify_email")
    return `${working}<div id="done" data-step hidden><p class="ok" role="status">Your email address is verified.</p><p><span id="verified-email"></span> is confirmed. You can close this page.</p></div>${error}`;
  if (kind === "magic_link" || kind === "oauth_callback")
    return (
      `${working}<form id="totp-form" data-step hidden><p>Enter the 6-digit code from your authenticator app (or a recovery code).</p>` +
      `<label for="code">Code</label><input id="code" name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="64">` +
      `<p class="error" id="totp-error" role="alert"></p><button type="submit">Sign in</button></form>` +
      `<div id="done" data-step hidden><p class="ok" role="status">You are signed in.</p><p>Signed in as <strong id="signed-in-email"></strong>. You can close this page.</p></div>${error}`
    );
  return (
    `<div id="form" data-step hidden><form id="reset-form"><label for="password">New password</label>` +
    `<input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="256">` +
    `<label for="password2">Repeat it</label><input id="password2" name="password2" type="password" autocomplete="new-password" required minlength="8" maxlength="256">` +
    `<p class="error" id="form-error" role="alert"></p><button type="submit">Change password</button></form></div>` +
    `<div id="done" data-step hidden><p class="ok" role="status">Your password was changed.</p><p>Sign in with the new password. Other sessions signed out: <span id="revoked"></span>.</p></div>${error}`
  );
}

/** The landing page of a mail link or an OAuth login; `apiBase` is the JSON API's path (e.g. `/api/v1`). Every value is escaped. */
export function renderLandingPage(kind: PageKind, opts: { appName: string; apiBase: string }): string {
  const app = escapeHtml(opts.appName);
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${escapeHtml(TITLES[kind])} · ${app}</title><link rel="icon" href="data:,">` +
    `<style>${STYLE}</style></head>` +
    `<body data-page="${kind}" data-api="${escapeHtml(opts.apiBase)}"><main><p class="app">${app}</p><h1>${escapeHtml(TITLES[kind])}</h1>` +
    `<noscript><p class="error">This page needs JavaScript.</p></noscript>${steps(kind)}</main>` +
    `<script>${SCRIPT}</script></body></html>`
  );
}
