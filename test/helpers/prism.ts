import type { Subprocess } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const PRISM = resolve(import.meta.dir, "../../node_modules/@stoplight/prism-cli/dist/index.js");

/** One problem Prism found in an exchange, as its `sl-violations` header lists it. */
export interface Violation {
  location: string[];
  severity: string;
  code?: string;
  message: string;
}

/** A running `prism proxy`: every request sent to `url` goes to the upstream, and the answer comes back with Prism's verdict. */
export interface PrismProxy {
  url: string;
  /** Everything Prism printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts Stoplight Prism in proxy mode over `document` (an OpenAPI object) in front of `upstream`. Prism
 * forwards each request, checks the request and the answer against the document, and names what does
 * not match in the answer's `sl-violations` header (`--errors=false`: the answer itself is passed on).
 * Resolves once Prism answers; its start (reading the document) is bounded by `startMs`.
 */
export async function startPrismProxy(document: unknown, upstream: string, opts: { startMs?: number } = {}): Promise<PrismProxy> {
  const dir = mkdtempSync(join(tmpdir(), "baas-prism-"));
  const file = join(dir, "openapi.json");
  writeFileSync(file, JSON.stringify(document));
  // A free port: asked of the OS, then handed to Prism (which has no port 0 of its own).
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  const proc: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn(
    // Its log of every request is not read (the verdicts come in the answers' headers): warnings and errors only.
    [process.execPath, PRISM, "proxy", file, upstream, "--host", "127.0.0.1", "--port", String(port), "--errors=false", "--verboseLevel", "warn"],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } },
  );
  let out = "";
  const decoder = new TextDecoder();
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        out += decoder.decode(value, { stream: true });
      }
    })().catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill();
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  // Prism listens once it has read the document: waited for as long as it keeps running.
  const deadline = Date.now() + (opts.startMs ?? 120_000);
  for (;;) {
    const up = await fetch(`${url}/health`).then(() => true, () => false);
    if (up) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`prism did not start:\n${out}`);
    }
    await Bun.sleep(50);
  }
  return { url, output: () => out, stop };
}

/** The violations of an answer that came through Prism (none when the header is absent). */
export function violationsOf(res: Response): Violation[] {
  const header = res.headers.get("sl-violations");
  return header ? (JSON.parse(header) as Violation[]) : [];
}
