/** Hook files: what each registers, load errors, and a reload. */
import { api } from "../api.ts";
import { fmtTime, h, replace } from "../dom.ts";
import { badge, busy, showError, table, toast } from "../ui.ts";

interface HooksStatus {
  dir: string;
  items: { file: string; hooks: { collection: string; handlers: string[] }[]; error: string | null; loaded_at: number | null }[];
}

/** Renders `#/hooks`. */
export async function renderHooks(main: HTMLElement, stale: () => boolean, given?: HooksStatus): Promise<void> {
  const status = given ?? (await api<HooksStatus>("GET", "/admin/hooks"));
  if (stale()) return;
  const reloadBtn = h("button", { type: "button", class: "btn primary" }, "Reload hook files");
  reloadBtn.addEventListener("click", () => {
    void busy(reloadBtn, async () => {
      const next = await api<HooksStatus>("POST", "/admin/hooks/reload");
      const failed = next.items.filter((i) => i.error).length;
      await renderHooks(main, stale, next).catch((e) => showError(e));
      toast(failed ? `Reloaded; ${failed} file(s) failed to load and keep their previous version.` : "Hook files reloaded.");
    });
  });
  replace(
    main,
    h("div", { class: "page-head" }, h("h1", null, "Hooks"), reloadBtn),
    h(
      "p",
      { class: "muted" },
      "Hook files in ",
      h("code", null, status.dir),
      ". The server loads them again when they change on disk; a file that fails to load keeps its previous version.",
    ),
    h(
      "div",
      { class: "card" },
      table(
        ["File", "Collection", "Handlers", "Loaded", "State"],
        status.items.map((f) => [
          h("code", null, f.file),
          f.hooks.map((x) => x.collection).join(", ") || "-",
          f.hooks.map((x) => x.handlers.join(", ")).join(" · ") || "-",
          f.loaded_at === null ? "-" : fmtTime(f.loaded_at),
          f.error ? h("span", null, badge("load error", "warn"), h("pre", { class: "error-text" }, f.error)) : badge("loaded", "ok"),
        ]),
        { empty: "No hook files." },
      ),
    ),
  );
}
