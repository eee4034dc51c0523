import { mkdirSync, rmSync } from "node:fs";
import type { AppContext } from "../context.ts";
import type { StorageConfig } from "../config.ts";
import { copyStorage, openStorage, storageOf } from "./storage.ts";

// Copies of the stored files: `baas backup <file>` writes them beside the database (<file>.storage/), `baas db
// copy --storage-to <url>` into another storage.

/** Copies every stored file into the folder `dir` (emptied first, made even when there is none); answers how many. */
export async function backupFiles(ctx: AppContext, dir: string): Promise<number> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return await copyStorage(storageOf(ctx), openStorage({ kind: "local", dir }));
}

/** Copies every stored file of `ctx` into the storage `to`; answers how many. */
export async function copyFilesTo(ctx: AppContext, to: StorageConfig): Promise<number> {
  return await copyStorage(storageOf(ctx), openStorage(to));
}
