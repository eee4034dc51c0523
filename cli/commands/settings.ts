import type { Command } from "commander";
import { SETTING_DEFS, parseSettingString, settingsForDisplay, updateSettings } from "../../src/settings/settings.ts";
import { badRequest } from "../../src/errors.ts";
import { settingsPatch } from "../../src/http/shared-checks.ts";
import { keyValues, output, serviceAction, withContext } from "../run.ts";

/** `baas settings list|get|set`: the same service functions as /admin/settings. */
export function registerSettings(program: Command): void {
  const group = program
    .command("settings")
    .description("read and change runtime settings (applied by a running server at once)")
    .addHelpText(
      "after",
      `
Keys: ${Object.keys(SETTING_DEFS).join(", ")}

Examples:
  $ baas settings list --json
  $ baas settings get registration_open
  $ baas settings set registration_open false
  $ baas settings set access_token_ttl_seconds 600`,
    );

  group
    .command("list")
    .description("all settings (client secrets shown as ********)")
    .action(serviceAction(settingsForDisplay, keyValues));

  group
    .command("get <key>")
    .description("one setting; --json prints { <key>: value }")
    .action(async (key: string, _opts: unknown, cmd: Command) => {
      const all = await withContext(cmd, (ctx) => settingsForDisplay(ctx));
      if (!Object.hasOwn(all, key)) throw badRequest(`unknown setting "${key}"`);
      const value = all[key];
      output(cmd, { [key]: value }, () => (typeof value === "object" ? JSON.stringify(value, null, 2) : String(value)));
    });

  group
    .command("set <key> <value>")
    .description("change one setting; the value is read by the setting's type (true/false, integers, text)")
    .action(
      serviceAction(
        (ctx, [key, value]) => updateSettings(ctx, settingsPatch.parse({ [key]: parseSettingString(key, value) })),
        (res, [key]) => `${key} = ${String(res[key])}`,
      ),
    );
}
