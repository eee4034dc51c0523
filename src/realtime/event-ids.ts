import { createCipheriv, createDecipheriv, createHmac } from "node:crypto";

/**
 * Event ids (the SSE `id:` a reconnect sends back as Last-Event-ID). Each is one AES block holding
 * a format byte, the epoch (7 bytes) and the event's number (8 bytes), encrypted with a key derived
 * from the server's secret JWT key. SECURITY: a stream sees its own events' ids only; numbered in
 * clear they would count the writes of collections it cannot read, and a guessed neighbour would
 * resume from an event it never got. Encrypted, an id says nothing and cannot be made up: one that
 * does not decrypt to this epoch is foreign (answered with `reset`). The epoch names the sequence:
 * today one per process; a sequence shared by every node would put its own there.
 */

const FORMAT = 1;
const EPOCH_BYTES = 7;
const ID_RE = /^[A-Za-z0-9_-]{22}$/;

export interface EventIds {
  /** The id of event number `seq`. */
  encode(seq: number): string;
  /** The number an id of this epoch stands for; -1 for any other string. */
  decode(raw: string): number;
}

/** The ids of one sequence (`epoch`: 7 random bytes), under a key derived from `secret`. */
export function eventIds(secret: string, epoch: Uint8Array): EventIds {
  const key = createHmac("sha256", secret).update("baas realtime event ids").digest().subarray(0, 16);
  // One block at a time, without padding: each `update` answers its block at once.
  const cipher = createCipheriv("aes-128-ecb", key, null).setAutoPadding(false);
  const decipher = createDecipheriv("aes-128-ecb", key, null).setAutoPadding(false);
  const block = Buffer.alloc(16);
  block[0] = FORMAT;
  block.set(epoch.subarray(0, EPOCH_BYTES), 1);
  return {
    encode(seq) {
      block.writeBigUInt64BE(BigInt(seq), 8);
      return cipher.update(block).toString("base64url");
    },
    decode(raw) {
      const text = raw.trim();
      if (!ID_RE.test(text)) return -1;
      const bytes = Buffer.from(text, "base64url");
      // The 22nd character carries 2 bits: a string that is not the canonical spelling of its bytes was made up.
      if (bytes.length !== 16 || bytes.toString("base64url") !== text) return -1;
      const plain = decipher.update(bytes);
      if (!plain.subarray(0, 1 + EPOCH_BYTES).equals(block.subarray(0, 1 + EPOCH_BYTES))) return -1;
      const seq = plain.readBigUInt64BE(8);
      return seq <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(seq) : -1;
    },
  };
}
