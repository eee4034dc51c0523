/** Shared console widgets: error and success notices, dialogs, busy buttons, tables. */
import { ApiError } from "./api.ts";
import { h, replace, uid, type Child } from "./dom.ts";

/** The page-wide notice area (errors and successes), set by the layout. */
let flashEl: HTMLElement | null = null;
let toastTimer: number | undefined;

export function setFlashElement(el: HTMLElement): void {
  flashEl = el;
}

/** Renders an error as a list of lines: the server's message, then each 422 error. */
export function errorContent(err: unknown): Child[] {
  if (err instanceof ApiError) {
    const lines = err.errors.length > 1 || (err.errors.length === 1 && err.errors[0].message !== err.message) ? err.errors : [];
    return [
      h("strong", null, err.message),
      err.status ? h("span", { class: "code" }, ` ${err.status} ${err.code}`) : null,
      lines.length ? h("ul", null, lines.map((e) => h("li", null, e.message))) : null,
    ];
  }
  return [h("strong", null, err instanceof Error ? err.message : String(err))];
}

/** Shows an error in `target` (a dialog's own area) or in the page's notice area. */
export function showError(err: unknown, target?: HTMLElement | null): void {
  const el = target ?? openDialogError() ?? flashEl;
  if (!el) return;
  clearTimeout(toastTimer);
  replace(el, h("div", { class: "alert error", role: "alert" }, errorContent(err)));
}

/** Shows a short success message in the page's notice area. */
export function toast(message: string): void {
  if (!flashEl) return;
  replace(flashEl, h("div", { class: "alert ok", role: "status" }, message));
  clearTimeout(toastTimer);
  const el = flashEl;
  toastTimer = window.setTimeout(() => replace(el), 4000);
}

/** Clears the page's notice area. */
export function clearFlash(): void {
  if (flashEl) replace(flashEl);
}

function openDialogError(): HTMLElement | null {
  const dialogs = document.querySelectorAll<HTMLDialogElement>("dialog[open] .dialog-error");
  return dialogs.length ? dialogs[dialogs.length - 1] : null;
}

/**
 * Runs an async action from a button or form: the button shows a busy state and is
 * disabled meanwhile; a failure is shown (in the open dialog, else on the page).
 */
export async function busy<T>(btn: HTMLButtonElement | null, fn: () => Promise<T>, errTarget?: HTMLElement | null): Promise<T | undefined> {
  if (btn) {
    if (btn.disabled) return undefined;
    btn.disabled = true;
    btn.setAttribute("aria-busy", "true");
    btn.classList.add("busy");
  }
  try {
    return await fn();
  } catch (err) {
    showError(err, errTarget);
    return undefined;
  } finally {
    if (btn) {
      btn.disabled = false;
      btn.removeAttribute("aria-busy");
      btn.classList.remove("busy");
    }
  }
}

/** A button; `kind` is "primary", "danger" or "" (plain). */
export function button(label: Child, onClick: (ev: MouseEvent) => void, opts: { kind?: string; title?: string; type?: string } = {}): HTMLButtonElement {
  return h("button", { type: opts.type ?? "button", class: `btn ${opts.kind ?? ""}`.trim(), title: opts.title, onclick: onClick }, label);
}

/** A loading placeholder. */
export function loading(text = "Loading…"): HTMLElement {
  return h("p", { class: "loading", "aria-busy": "true" }, h("span", { class: "spinner", "aria-hidden": "true" }), text);
}

/** A labelled form control. */
export function field(label: string, control: HTMLElement, hint?: Child): HTMLElement {
  const id = control.id || uid();
  control.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("small", { class: "hint" }, hint) : null);
}

/** A labelled checkbox. */
export function checkbox(label: string, checked: boolean, attrs: Record<string, unknown> = {}): { el: HTMLElement; input: HTMLInputElement } {
  const input = h("input", { type: "checkbox", checked, ...attrs });
  return { el: h("label", { class: "check" }, input, " ", label), input };
}

export interface DialogHandle {
  dialog: HTMLDialogElement;
  error: HTMLElement;
  close(): void;
}

/**
 * Opens a modal dialog (native <dialog>: Esc closes it, focus stays inside).
 * `onSubmit` runs when the form is submitted (Enter or the primary button); returning true closes it.
 */
export function openDialog(opts: {
  title: string;
  body: Child;
  submitLabel?: string;
  danger?: boolean;
  wide?: boolean;
  onSubmit?: (h: DialogHandle, btn: HTMLButtonElement) => Promise<boolean | void>;
  onClose?: () => void;
}): DialogHandle {
  const error = h("div", { class: "dialog-error" });
  const submit = h(
    "button",
    { type: "submit", class: `btn ${opts.danger ? "danger" : "primary"}` },
    opts.submitLabel ?? "Save",
  );
  const cancel = h("button", { type: "button", class: "btn", onclick: () => handle.close() }, opts.onSubmit ? "Cancel" : "Close");
  const titleId = uid("dlg");
  const form = h(
    "form",
    { method: "dialog", novalidate: true },
    h("h2", { id: titleId }, opts.title),
    error,
    h("div", { class: "dialog-body" }, opts.body),
    h("div", { class: "actions" }, opts.onSubmit ? submit : null, cancel),
  );
  const dialog = h("dialog", { class: opts.wide ? "wide" : "", "aria-labelledby": titleId }, form);
  const handle: DialogHandle = {
    dialog,
    error,
    close() {
      dialog.close();
    },
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!opts.onSubmit) return handle.close();
    void busy(
      submit,
      async () => {
        replace(error);
        if ((await opts.onSubmit!(handle, submit)) !== false) handle.close();
      },
      error,
    );
  });
  dialog.addEventListener("close", () => {
    dialog.remove();
    opts.onClose?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  const first = dialog.querySelector<HTMLElement>("input:not([type=hidden]), textarea, select");
  (first ?? submit).focus();
  return handle;
}

/** Asks for confirmation; resolves true when confirmed. With `typeToConfirm`, that text must be typed first. */
export function confirmDialog(title: string, message: Child, opts: { confirmLabel?: string; typeToConfirm?: string } = {}): Promise<boolean> {
  return new Promise((resolve) => {
    let ok = false;
    const input = opts.typeToConfirm ? h("input", { type: "text", autocomplete: "off", spellcheck: "false" }) : null;
    openDialog({
      title,
      danger: true,
      submitLabel: opts.confirmLabel ?? "Delete",
      body: [
        h("p", null, message),
        input ? field(`Type ${opts.typeToConfirm} to confirm`, input) : null,
      ],
      onSubmit: async () => {
        if (input && input.value !== opts.typeToConfirm) throw new Error(`type ${opts.typeToConfirm} to confirm`);
        ok = true;
      },
      onClose: () => resolve(ok),
    });
  });
}

/** A table with a header row; `rows` are arrays of cells. */
export function table(headers: Child[], rows: Child[][], opts: { empty?: string; rowAttrs?: (i: number) => Record<string, unknown> } = {}): HTMLElement {
  if (!rows.length) return h("p", { class: "empty" }, opts.empty ?? "Nothing here yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h("thead", null, h("tr", null, headers.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, rows.map((r, i) => h("tr", opts.rowAttrs?.(i) ?? null, r.map((c) => h("td", null, c))))),
    ),
  );
}

/** A small coloured label. */
export function badge(text: string, kind = ""): HTMLElement {
  return h("span", { class: `badge ${kind}`.trim() }, text);
}

/** Parses a JSON text typed by the admin; a syntax error becomes a readable message. */
export function parseJsonInput(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
