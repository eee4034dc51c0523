import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface ConsoleBundle {
  js: string;
  css: string;
  /** Content hash of js + css, used in the asset file names so they can be cached forever. */
  hash: string;
}

/**
 * Bundles the console's browser code (ui/main.ts) and reads its stylesheet.
 * Imported as a Bun macro by assets.ts: `bun build --compile` runs it once and embeds the
 * result as string literals in the binary; running from source runs it when assets.ts loads.
 * Bun.build cannot be called inside a macro, so the bundler's CLI is spawned instead.
 */
export function bundleConsole(): ConsoleBundle {
  const dir = join(import.meta.dir, "ui");
  const res = Bun.spawnSync(
    [process.execPath, "build", join(dir, "main.ts"), "--target=browser", "--format=esm", "--minify"],
    { env: { ...process.env, BUN_BE_BUN: "1" }, stdout: "pipe", stderr: "pipe" },
  );
  if (res.exitCode !== 0) {
    const msg = `console bundle failed:\n${res.stderr.toString()}`;
    process.stderr.write(msg + "\n");
    throw new Error(msg);
  }
  const js = res.stdout.toString();
  const css = readFileSync(join(dir, "style.css"), "utf8");
  const hash = new Bun.CryptoHasher("sha256").update(js).update(css).digest("hex").slice(0, 16);
  return { js, css, hash };
}
