import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const git = Bun.spawnSync(["git", "ls-files", "--", "node_modules", "dist", "baas_data"], { cwd: root, stderr: "ignore" });

describe("repository hygiene", () => {
  // A tracked node_modules (even a symlink) replaces the installed dependencies of every
  // checkout that pulls it, so the tree must never carry one.
  test.skipIf(git.exitCode !== 0)("git tracks no node_modules, dist or data directory", () => {
    expect(git.stdout.toString().trim()).toBe("");
  });
});
