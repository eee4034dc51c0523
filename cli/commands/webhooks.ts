import { InvalidArgumentError, type Command } from "commander";
import { webhookCreate } from "../../src/http/shared-checks.ts";
import { WEBHOOK_ACTIONS, type WebhookJson } from "../../src/webhooks/rows.ts";
import { createWebhook, deleteWebhook, getWebhook, listAttempts, listWebhooks, retryDelivery } from "../../src/webhooks/store.ts";
import { collect, confirmOnTerminal, keyValues, output, serviceAction, table, when, withContext } from "../run.ts";

/** Collects a repeatable --action, each one of WEBHOOK_ACTIONS. */
/** A repeatable option that also takes comma-separated lists (`--collection a,b` is `--collection a --collection b`). */
function collectList(value: string, previous: string[] | undefined): string[] {
  const names = value.split(",").map((v) => v.trim()).filter(Boolean);
  // An empty value (an unset shell variable) must not read as "none given", which means every collection.
  if (!names.length) throw new InvalidArgumentError(`expected a name (or a comma-separated list), got "${value}"`);
  return names.reduce((all, v) => collect(v, all), previous ?? []);
}

function collectAction(value: string, previous: string[] | undefined): string[] {
  const actions = collectList(value, undefined);
  for (const a of actions)
    if (!(WEBHOOK_ACTIONS as readonly string[]).includes(a)) throw new InvalidArgumentError(`expected one of ${WEBHOOK_ACTIONS.join(", ")}, got "${a}"`);
  return [...(previous ?? []), ...actions];
}

function showWebhook(w: WebhookJson): string {
  return keyValues({ ...w, collections: w.collections.join(", "), actions: w.actions.join(", "), created_at: when(w.created_at), updated_at: when(w.updated_at) });
}

/** `baas webhooks list|add|remove|deliveries|retry`: the same service functions as /admin/webhooks. */
export function registerWebhooks(program: Command): void {
  const group = program
    .command("webhooks")
    .description("POST change events of collections to URLs, signed, retried for 24 hours (delivered by baas serve)")
    .addHelpText(
      "after",
      `
The server (baas serve) sends the deliveries; these commands change the webhooks and read their history.

Examples:
  $ baas webhooks add https://example.com/hooks/orders --collection orders --action create --action update
  $ baas webhooks add https://example.com/hooks/all --collection '*' --secret "$WEBHOOK_SECRET"
  $ baas webhooks list --json
  $ baas webhooks deliveries 01HZX3…
  $ baas webhooks retry 01HZX3… 01HZX4…
  $ baas webhooks remove 01HZX3… --yes`,
    );

  group
    .command("list")
    .description("list webhooks (secrets masked)")
    .addHelpText("after", "\nExample:\n  $ baas webhooks list --json   # { items: [webhook, ...] }")
    .action(
      serviceAction(listWebhooks, (res) =>
        table(
          ["ID", "URL", "COLLECTIONS", "ACTIONS", "ENABLED", "PENDING"],
          res.items.map((w) => [w.id, w.url, w.collections.join(","), w.actions.join(","), w.enabled ? "yes" : "no", w.pending]),
        ),
      ),
    );

  group
    .command("add <url>")
    .description("add a webhook: its secret (given or made) is printed once")
    .option("--collection <name>", 'a collection whose changes are sent, or "*" for all (repeatable, or comma-separated; default: *)', collectList)
    .option("--collections <names>", "the same as --collection", collectList)
    .option(`--action <action>`, `an action that is sent: ${WEBHOOK_ACTIONS.join(", ")} (repeatable, or comma-separated; default: all)`, collectAction)
    .option("--actions <actions>", "the same as --action", collectAction)
    .option("--secret <secret>", "the signing secret, 1 to 256 characters (default: one is made)")
    .option("--disabled", "add it disabled (no event is recorded for it until it is enabled)")
    .addHelpText(
      "after",
      `
Each delivery is a POST of { collection, action, record } with X-Baas-Signature: sha256=<HMAC-SHA256 of the
body with the secret>, X-Baas-Event-Id and X-Baas-Attempt (see docs/API.md, "Webhooks").

Examples:
  $ baas webhooks add https://example.com/in --collection orders
  $ baas webhooks add https://example.com/in --collections orders,payments --actions create,update
  $ baas webhooks add http://127.0.0.1:9000/baas --collection '*' --action delete --json`,
    )
    .action(async (url: string, opts: { collection?: string[]; collections?: string[]; action?: string[]; actions?: string[]; secret?: string; disabled?: boolean }, cmd: Command) => {
      const collections = [...(opts.collection ?? []), ...(opts.collections ?? [])];
      const actions = [...(opts.action ?? []), ...(opts.actions ?? [])];
      const body: Record<string, unknown> = { url, collections: collections.length ? collections : ["*"] };
      if (actions.length) body.actions = actions;
      if (opts.secret !== undefined) body.secret = opts.secret;
      if (opts.disabled) body.enabled = false;
      const res = await withContext(cmd, (ctx) => createWebhook(ctx, webhookCreate.parse(body)));
      output(cmd, res, () => `${showWebhook(res)}\n\nKeep the secret: it is not shown again.`);
    });

  group
    .command("remove <id>")
    .description("remove a webhook and its pending deliveries")
    .option("-y, --yes", "do not ask for confirmation on a terminal (without one, nothing is asked)")
    .addHelpText("after", "\nExample:\n  $ baas webhooks remove 01HZX3ABCDEF... --yes")
    .action(async (id: string, opts: { yes?: boolean }, cmd: Command) => {
      const res = await withContext(cmd, async (ctx) => {
        const w = await getWebhook(ctx, id);
        const go = await confirmOnTerminal(opts.yes, `Remove the webhook to ${w.url}${w.pending ? ` and its ${w.pending} pending deliveries` : ""}?`);
        return go ? await deleteWebhook(ctx, id) : null;
      });
      if (!res) throw new Error("cancelled, nothing removed");
      output(cmd, res, () => `removed webhook ${id}`);
    });

  group
    .command("deliveries <id>")
    .description("the webhook's last 100 delivery attempts, newest first")
    .addHelpText("after", "\nExample:\n  $ baas webhooks deliveries 01HZX3ABCDEF... --json   # { items: [attempt, ...] }")
    .action(
      serviceAction(
        (ctx, [id]) => listAttempts(ctx, id),
        (res) =>
          table(
            ["AT", "DELIVERY", "EVENT", "ATTEMPT", "RESULT", "STATUS", "NEXT"],
            res.items.map((a) => [
              when(a.at),
              a.delivery_id,
              `${a.collection} ${a.action} ${a.record_id}`,
              a.attempt,
              a.ok ? `ok ${a.response_status}` : (a.error ?? `HTTP ${a.response_status}`),
              a.status,
              a.next_attempt_at === null ? "-" : when(a.next_attempt_at),
            ]),
          ),
      ),
    );

  group
    .command("retry <id> <delivery>")
    .description("send a delivery again (the server sends it at once), with the same event id")
    .addHelpText("after", "\nExample:\n  $ baas webhooks retry 01HZX3ABCDEF... 01HZX4GHIJKL...")
    .action(
      serviceAction(
        (ctx, [id, delivery]) => retryDelivery(ctx, id, delivery),
        (res) => `delivery ${res.id} is due again (the server sends it within a second)`,
      ),
    );
}
