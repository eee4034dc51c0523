import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// An S3-protocol server for tests (s3rver, run by Node as a child process), with one bucket.

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The environment that points an app's storage at the bucket, under `prefix`. */
  env(prefix: string): Record<string, string>;
  stop(): Promise<void>;
}

const BIN = join(import.meta.dir, "../../node_modules/s3rver/bin/s3rver.js");

/** Starts s3rver on a free port with a fresh directory and the bucket `baas-test`. */
export async function startS3rver(): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "baas-s3-"));
  const bucket = "baas-test";
  const proc = Bun.spawn(["node", BIN, "-d", dir, "-a", "127.0.0.1", "-p", "0", "--configure-bucket", bucket], { stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  let port = 0;
  while (!port) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`s3rver did not start: ${out}${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
    const m = /listening on [\d.]+:(\d+)/.exec(out);
    if (m) port = Number(m[1]);
  }
  // Its log goes on: read and dropped, so the pipe never fills.
  void (async () => {
    for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return;
  })();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: (prefix) => ({
      STORAGE_URL: `s3://${bucket}/${prefix}`,
      S3_ENDPOINT: endpoint,
      S3_REGION: "us-east-1",
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
    }),
    async stop() {
      proc.kill();
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
