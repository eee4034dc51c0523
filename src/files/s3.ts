import { S3Client } from "bun";
import type { StorageConfig } from "../config.ts";
import type { FileStorage } from "./storage.ts";

// Files in a bucket of any S3-compatible service, through Bun's built-in client (no dependency, and it is in
// the compiled binary). A file is uploaded in parts as it streams in; a failed upload is deleted.

type S3Config = Extract<StorageConfig, { kind: "s3" }>;

/** Bytes per part of a streamed upload (S3's smallest part is 5 MiB). */
const PART_SIZE = 5 * 1024 * 1024;

export function s3Storage(config: S3Config): FileStorage {
  const client = new S3Client({
    bucket: config.bucket,
    endpoint: config.endpoint,
    region: config.region,
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
  });
  const prefix = config.prefix ? `${config.prefix}/` : "";
  const k = (key: string) => prefix + key;
  return {
    kind: "s3",
    async write(key, body, opts) {
      const file = client.file(k(key));
      // A small file (most) is sent in one request; past one part, as a multipart upload.
      const head: Uint8Array[] = [];
      let size = 0;
      const it = body[Symbol.asyncIterator]();
      let next = await it.next();
      while (!next.done && size < PART_SIZE) {
        head.push(next.value);
        size += next.value.byteLength;
        next = await it.next();
      }
      if (next.done) {
        await file.write(Buffer.concat(head), { type: opts.type });
        return size;
      }
      const writer = file.writer({ type: opts.type, partSize: PART_SIZE, retry: 2 });
      try {
        for (const c of head) await writer.write(c);
        while (!next.done) {
          size += next.value.byteLength;
          await writer.write(next.value);
          next = await it.next();
        }
        await writer.end();
        return size;
      } catch (err) {
        await Promise.resolve(writer.end(err as Error)).catch(() => {});
        await file.delete().catch(() => {});
        throw err;
      }
    },
    async stat(key) {
      try {
        const st = await client.file(k(key)).stat();
        return { size: st.size, type: (st.type || "application/octet-stream").split(";")[0]!.trim(), mtime: st.lastModified.getTime(), etag: st.etag.startsWith('"') ? st.etag : `"${st.etag}"` };
      } catch (err) {
        if ((err as { code?: string }).code === "NoSuchKey" || /not ?found|NoSuchKey|404/i.test(String((err as Error).message))) return null;
        throw err;
      }
    },
    read(key, range) {
      const f = client.file(k(key));
      return (range ? f.slice(range.start, range.end + 1) : f).stream();
    },
    async delete(key) {
      await client.file(k(key)).delete().catch((err: { code?: string }) => {
        if (err?.code !== "NoSuchKey") throw err;
      });
    },
    async *list(under) {
      let token: string | undefined;
      for (;;) {
        const page = await client.list({ prefix: prefix + under, maxKeys: 1000, ...(token ? { continuationToken: token } : {}) });
        for (const o of page.contents ?? [])
          yield { key: o.key.slice(prefix.length), mtime: o.lastModified ? new Date(o.lastModified).getTime() : 0 };
        if (!page.isTruncated || !page.nextContinuationToken) return;
        token = page.nextContinuationToken;
      }
    },
  };
}
