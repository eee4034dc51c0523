#!/usr/bin/env bun
import { Command, CommanderError } from "commander";
import { VERSION } from "../src/version.ts";
import { registerServe } from "./commands/serve.ts";

const program = new Command();
program
  .name("baas")
  .description("baas: a Backend-as-a-Service in one executable")
  .version(VERSION, "-v, --version")
  .option("--data <dir>", "data directory (env DATA_DIR, default ./baas_data)")
  .option("--json", "print machine-readable JSON")
  .showHelpAfterError()
  .exitOverride();

registerServe(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") process.exit(0);
    process.exit(2);
  }
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
