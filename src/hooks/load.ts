import { copyFileSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { checkRouteConflicts, checkRoutes, type FnRoute } from "./routes.ts";
import { HOOK_NAMES, type HookModule, type HookSet } from "./types.ts";

const HOOK_FILE = /\.(ts|js|mjs)$/;
/** Copies made for fresh imports (see loadHookFile), numbered. */
let copies = 0;

/** The functions a hook object may carry: the in-transaction handlers and `onCommit`. */
export const HOOK_KEYS = [...HOOK_NAMES, "onCommit"] as const;

/** A hooks directory that cannot be loaded: the server refuses to start rather than run without its hooks. */
export class HookLoadError extends Error {
  override name = "HookLoadError";
}

/** Checks one default export; returns the hook with its file, or throws naming the problem. */
function checkHook(value: unknown, file: string): HookModule {
  const where = `hook file ${file}`;
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw new HookLoadError(`${where} must default-export { collection, beforeCreate?, afterCreate?, ... }`);
  const h = value as Record<string, unknown>;
  if (typeof h.collection !== "string" || !h.collection)
    throw new HookLoadError(`${where}: "collection" must be a collection name or "*"`);
  for (const [k, v] of Object.entries(h)) {
    if (k === "collection") continue;
    if (!(HOOK_KEYS as readonly string[]).includes(k))
      throw new HookLoadError(`${where}: unknown key "${k}" (expected collection, ${HOOK_KEYS.join(", ")})`);
    if (v !== undefined && typeof v !== "function") throw new HookLoadError(`${where}: "${k}" must be a function`);
  }
  return { ...(h as unknown as HookModule), file };
}

/** The hook files of a hooks directory, sorted by name: `*.ts` / `*.js` / `*.mjs`, not `_*` or `.*` (helpers they may import). */
export function hookFiles(root: string): string[] {
  return readdirSync(root)
    .filter((f) => HOOK_FILE.test(f) && !f.endsWith(".d.ts") && !f.startsWith("_") && !f.startsWith("."))
    .sort()
    .map((f) => join(root, f));
}

/** What one hook file registers: its hooks (default export) and its routes (`routes` export, CONTRACT §15). */
export interface HookFile {
  hooks: HookModule[];
  routes: FnRoute[];
}

/**
 * Imports one hook file and checks its default export (one hook object or an array of them) and its `routes`
 * export (see routes.ts); a file may hold routes alone. Throws a HookLoadError naming it.
 */
export async function loadHookFile(file: string, opts: { fresh?: boolean } = {}): Promise<HookFile> {
  let mod: { default?: unknown; routes?: unknown };
  // `fresh`: imported through a copy beside it under a new name (its relative imports resolve alike), then removed.
  // Bun keeps a module that threw while it ran under its path, and answers every later import of the path with
  // that error, whatever the file holds now (require.cache does not hold it; a query string does not help).
  const from = opts.fresh ? join(dirname(file), `.${basename(file).replace(/\.[^.]+$/, "")}.reload-${process.pid}-${++copies}${extname(file)}`) : file;
  try {
    if (from !== file) copyFileSync(file, from);
    mod = (await import(pathToFileURL(from).href)) as { default?: unknown; routes?: unknown };
  } catch (err) {
    const message = ((err as Error)?.message ?? String(err)).replaceAll(from, file);
    throw new HookLoadError(`hook file ${file} failed to load: ${message}`);
  } finally {
    if (from !== file) rmSync(from, { force: true });
  }
  let exported = mod.default;
  // Routes may also sit in the default object (`export default { collection, beforeCreate, routes }`, or
  // `{ routes }` alone), beside or instead of the `routes` export.
  let inDefault: unknown;
  if (exported && typeof exported === "object" && !Array.isArray(exported) && "routes" in exported) {
    const { routes: given, ...rest } = exported as Record<string, unknown>;
    inDefault = given;
    exported = Object.keys(rest).length ? rest : undefined;
  }
  const routes = [
    ...(mod.routes === undefined ? [] : checkRoutes(mod.routes, file, fail)),
    ...(inDefault === undefined ? [] : checkRoutes(inDefault, file, fail)),
  ];
  if (exported === undefined && (mod.routes !== undefined || inDefault !== undefined)) return { hooks: [], routes };
  return { hooks: (Array.isArray(exported) ? exported : [exported]).map((h) => checkHook(h, file)), routes };
}

const fail = (message: string) => new HookLoadError(message);

/**
 * Loads every hook file of the hooks directory (CONTRACT §5), sorted by name (see hookFiles). A missing
 * directory means no hooks; a file that fails to load is a HookLoadError naming it, and so are two routes of
 * one method and path (naming both files). Works in the compiled binary too: Bun transpiles an imported `.ts`
 * file at run time. (`baas serve` loads them again when they change: ops/hook-files.ts.)
 */
export async function loadHooks(dir: string): Promise<HookSet> {
  const root = resolve(dir);
  if (!existsSync(root)) return { list: [] };
  if (!statSync(root).isDirectory()) throw new HookLoadError(`HOOKS_DIR ${root} is not a directory`);
  const list: HookModule[] = [];
  const routes: FnRoute[] = [];
  for (const file of hookFiles(root)) {
    const loaded = await loadHookFile(file);
    list.push(...loaded.hooks);
    routes.push(...loaded.routes);
  }
  checkRouteConflicts(routes, fail);
  return { list, routes };
}
