import { existsSync, realpathSync, statSync, watch, type FSWatcher } from "node:fs";
import { basename, resolve, sep } from "node:path";
import { noteHooksChanged } from "../catalog/catalog.ts";
import type { AppContext } from "../context.ts";
import { subscribeCommitHooks } from "../hooks/commit.ts";
import { HOOK_KEYS, hookFiles, loadHookFile } from "../hooks/load.ts";
import type { HookModule } from "../hooks/types.ts";
import { routeConflict, type FnRoute } from "../hooks/routes.ts";

/**
 * Hooks reload (CONTRACT §15): `baas serve` loads the hook files again when they change (watchHooks) and on
 * `POST /admin/hooks/reload`. Every file is imported afresh; one that fails to load keeps the version loaded
 * before (if any), and the failure is logged and shown by `GET /admin/hooks`. The new list replaces
 * `ctx.hooks.list` at once, and the onCommit handlers follow it.
 */

/** One hook file: the version in use and the last load's failure. */
interface FileState {
  /** What the version in use registers (none when the file never loaded). */
  hooks: HookModule[];
  routes: FnRoute[];
  error: string | null;
  loadedAt: number | null;
}

interface Registry {
  files: Map<string, FileState>;
  /** Files that failed to load once: imported fresh from then on (see loadHookFile). */
  failedOnce: Set<string>;
  /** The reload running: the next one waits for it. */
  running: Promise<unknown>;
}

const registries = new WeakMap<AppContext, Registry>();

/** The files as loaded at the start (`ctx.hooks`, each hook naming its file, loaded at `loadedAt`), until the first reload. */
function registryOf(ctx: AppContext, loadedAt: number | null = null): Registry {
  let reg = registries.get(ctx);
  if (!reg) {
    const files = new Map<string, FileState>();
    for (const h of ctx.hooks.list) {
      const file = h.file ?? "";
      const state = files.get(file) ?? { hooks: [], routes: [], error: null, loadedAt };
      state.hooks.push(h);
      files.set(file, state);
    }
    for (const r of ctx.hooks.routes ?? []) {
      const file = r.file ?? "";
      const state = files.get(file) ?? { hooks: [], routes: [], error: null, loadedAt };
      state.routes.push(r);
      files.set(file, state);
    }
    registries.set(ctx, (reg = { files, failedOnce: new Set(), running: Promise.resolve() }));
  }
  return reg;
}

/** The hook files and what they register, as `GET /admin/hooks` answers. */
export interface HooksStatus {
  dir: string;
  items: { file: string; hooks: { collection: string; handlers: string[] }[]; error: string | null; loaded_at: number | null }[];
}

/** `GET /admin/hooks`: the hook files in use, their handlers and their last load's failure. */
export function hooksStatus(ctx: AppContext): HooksStatus {
  const reg = registryOf(ctx);
  return {
    dir: resolve(ctx.config.hooksDir),
    items: [...reg.files.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([file, s]) => ({
        file: basename(file),
        hooks: s.hooks.map((h) => ({ collection: h.collection, handlers: HOOK_KEYS.filter((k) => typeof h[k] === "function") })),
        error: s.error,
        loaded_at: s.loadedAt,
      })),
  };
}

/**
 * Bun keeps each imported module, and imports it again only once it is forgotten: every module of the hooks
 * directory (hook files and the helpers they import, not packages) is forgotten before a reload.
 */
function forgetModules(root: string): void {
  const cache = require.cache as Record<string, unknown>;
  // Modules are kept under their real path: a HOOKS_DIR reached through a symbolic link is looked up by both.
  const roots = [...new Set([root, existsSync(root) ? realpathSync(root) : root])].map((r) => r + sep);
  for (const key of Object.keys(cache))
    if (roots.some((r) => key.startsWith(r)) && !key.includes(`${sep}node_modules${sep}`)) delete cache[key];
}

/**
 * Loads every hook file of HOOKS_DIR again, one reload at a time, and answers the new status. A file that fails
 * keeps its previous version; a file that is gone is dropped with its hooks.
 */
export function reloadHooks(ctx: AppContext): Promise<HooksStatus> {
  const reg = registryOf(ctx);
  const run = reg.running.then(() => reloadNow(ctx, reg));
  reg.running = run.catch(() => {});
  return run;
}

async function reloadNow(ctx: AppContext, reg: Registry): Promise<HooksStatus> {
  const root = resolve(ctx.config.hooksDir);
  const present = existsSync(root) && statSync(root).isDirectory() ? hookFiles(root) : [];
  forgetModules(root);
  const files = new Map<string, FileState>();
  for (const file of present) {
    const before = reg.files.get(file);
    try {
      files.set(file, { ...(await loadHookFile(file, { fresh: reg.failedOnce.has(file) })), error: null, loadedAt: ctx.clock.now() });
    } catch (err) {
      reg.failedOnce.add(file);
      const error = err instanceof Error ? err.message : String(err);
      ctx.log.error(before?.hooks.length ? "hook file failed to load; its previous version stays in use" : "hook file failed to load", {
        file,
        error,
      });
      files.set(file, { hooks: before?.hooks ?? [], routes: before?.routes ?? [], error, loadedAt: before?.loadedAt ?? null });
    }
  }
  // Routes, file by file in name order: a file whose new routes answer the same requests as an earlier file's fails
  // to load as a broken one does (its previous routes stay where they still fit).
  const routes: FnRoute[] = [];
  for (const [file, state] of files) {
    const conflict = routeConflict(routes, state.routes);
    if (conflict) {
      const before = reg.files.get(file);
      ctx.log.error("hook file failed to load; its previous version stays in use", { file, error: conflict });
      const kept = before && before.routes !== state.routes && !routeConflict(routes, before.routes) ? before : null;
      files.set(file, { hooks: kept?.hooks ?? before?.hooks ?? [], routes: kept?.routes ?? [], error: conflict, loadedAt: before?.loadedAt ?? null });
    }
    routes.push(...files.get(file)!.routes);
  }
  reg.files = files;
  ctx.hooks.list = [...files.values()].flatMap((s) => s.hooks);
  ctx.hooks.routes = routes;
  noteHooksChanged(ctx);
  subscribeCommitHooks(ctx.hooks, ctx.events, ctx.log);
  const failed = [...files.values()].filter((s) => s.error).length;
  ctx.log.info("hooks reloaded", { files: files.size, hooks: ctx.hooks.list.length, failed });
  return hooksStatus(ctx);
}

/** What changes in the hooks directory are worth a reload: scripts and JSON they may import, not editor files. */
const RELEVANT = /\.(ts|js|mjs|cjs|json)$/;

/**
 * Watches HOOKS_DIR (and the directories below it) and reloads the hooks once changes stop for `debounceMs`
 * (an editor's save is several events). A directory that does not exist yet (a fresh data directory has none) is
 * looked for every `pollMs`, and watched, its files loaded, once it appears. Returns the function that stops watching.
 */
export function watchHooks(ctx: AppContext, opts: { debounceMs?: number; pollMs?: number } = {}): () => void {
  // The hooks in use now were loaded at this start.
  registryOf(ctx, ctx.clock.now());
  const root = resolve(ctx.config.hooksDir);
  const isDir = () => existsSync(root) && statSync(root).isDirectory();
  const debounceMs = opts.debounceMs ?? 200;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const reloadSoon = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      reloadHooks(ctx).catch((err) => ctx.log.error("reloading hooks failed", { error: err instanceof Error ? err.message : String(err) }));
    }, debounceMs);
  };
  const cancelReload = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  if (!isDir()) {
    let close = () => {};
    const poll = setInterval(() => {
      if (!isDir()) return;
      clearInterval(poll);
      close = watchDir(ctx, root, reloadSoon);
      reloadSoon();
    }, opts.pollMs ?? 1000);
    poll.unref?.();
    return () => {
      clearInterval(poll);
      cancelReload();
      close();
    };
  }
  const close = watchDir(ctx, root, reloadSoon);
  return () => {
    cancelReload();
    close();
  };
}

/** Watches `root` and the directories below it, calling `reloadSoon` on a change to a hook file; answers the close of the watcher. */
function watchDir(ctx: AppContext, root: string, reloadSoon: () => void): () => void {
  let watcher: FSWatcher;
  try {
    watcher = watch(root, { recursive: true }, (_event, name) => {
      const file = name === null ? null : String(name);
      if (file !== null && (!RELEVANT.test(file) || file.split(/[\\/]/).some((part) => part.startsWith(".") || part === "node_modules"))) return;
      reloadSoon();
    });
  } catch (err) {
    ctx.log.warn("cannot watch the hooks directory; reload with POST /api/v1/admin/hooks/reload", { dir: root, error: String(err) });
    return () => {};
  }
  watcher.on("error", (err) => ctx.log.warn("watching the hooks directory failed", { dir: root, error: String(err) }));
  return () => watcher.close();
}
