// Crockford base32, as ULIDs use.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const RANDOM_HALF = 2 ** 40;

let lastTime = -1;
let timePart = "";
// The 80 random bits as two 40-bit halves, so the monotonic increment is plain arithmetic.
let high = 0;
let low = 0;
let highPart = "";

// Every 10-bit value as its two base32 characters: a 40-bit half encodes with 4 lookups.
const PAIRS = Array.from({ length: 1024 }, (_, i) => ALPHABET[i >> 5] + ALPHABET[i & 31]);

function encode40(n: number): string {
  const top = Math.floor(n / 1048576);
  const bottom = n % 1048576;
  return PAIRS[top >> 10] + PAIRS[top & 1023] + PAIRS[bottom >> 10] + PAIRS[bottom & 1023];
}

function encode(n: number, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

function freshRandom(): void {
  const b = crypto.getRandomValues(new Uint8Array(10));
  high = ((b[0] * 256 + b[1]) * 256 + b[2]) * 65536 + b[3] * 256 + b[4];
  low = ((b[5] * 256 + b[6]) * 256 + b[7]) * 65536 + b[8] * 256 + b[9];
  highPart = encode40(high);
}

/**
 * A new record id: a ULID (48-bit millisecond time, 80 random bits), strictly increasing within
 * this process even inside one millisecond or if the clock steps back (the random part is then
 * incremented, as the ULID spec's monotonic mode does). Encoded by hand: ids are minted per
 * record in bulk inserts, where the generic library was a tenth of the cost.
 */
export function newRecordId(now: number): string {
  if (now > lastTime) {
    lastTime = now;
    timePart = encode(now, 10);
    freshRandom();
  } else if (++low === RANDOM_HALF) {
    low = 0;
    if (++high === RANDOM_HALF) throw new Error("ULID random part overflowed within one millisecond");
    highPart = encode40(high);
  }
  return timePart + highPart + encode40(low);
}

/**
 * A ULID for a system row (a user, a session, an API key) from the `ulid` package, loaded at the first
 * one: the package imports node:crypto, whose loading costs every start-up several milliseconds.
 */
export function newUlid(now: number): string {
  ulidOf ??= (require("ulid") as typeof import("ulid")).ulid;
  return ulidOf(now);
}
let ulidOf: ((seedTime?: number) => string) | undefined;
