import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { HookModule, HookSet } from "./types.ts";

/** Loads every `*.ts` / `*.js` file of the hooks directory (CONTRACT §5), sorted by name. */
export async function loadHooks(dir: string): Promise<HookSet> {
  if (!existsSync(dir)) return { list: [] };
  const files = readdirSync(dir)
    .filter((f) => /\.(ts|js|mjs)$/.test(f) && !f.endsWith(".d.ts"))
    .sort();
  const list: HookModule[] = [];
  for (const f of files) {
    const file = join(dir, f);
    const mod = (await import(file)) as { default?: HookModule };
    const h = mod.default;
    if (!h || typeof h !== "object" || typeof h.collection !== "string")
      throw new Error(`hook file ${file} must default-export { collection, beforeCreate?, ... }`);
    list.push({ ...h, file });
  }
  return { list };
}
