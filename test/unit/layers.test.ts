import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");

describe("import layers", () => {
  // The rules are in .dependency-cruiser.cjs (each folder of src/ imports only the layers below it, so no import
  // cycle between folders; src/ never imports cli/); docs/ARCHITECTURE.md explains them.
  test("src/ and cli/ keep the import rules of .dependency-cruiser.cjs", () => {
    const run = Bun.spawnSync(
      [process.execPath, join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs"), "src", "cli", "--config", ".dependency-cruiser.cjs", "--output-type", "err"],
      { cwd: root, stdout: "pipe", stderr: "pipe" },
    );
    const report = `${run.stdout.toString()}${run.stderr.toString()}`.trim();
    expect({ exitCode: run.exitCode, report: run.exitCode === 0 ? "" : report }).toEqual({ exitCode: 0, report: "" });
  }, 120_000);
});
