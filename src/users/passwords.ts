import { fieldError } from "../errors.ts";
import { inHashTurn } from "./hash-turns.ts";

/**
 * Who a hash is for: the client whose address's turn it takes (hash-turns.ts; not made once the client has gone),
 * or null for an admin's request, which takes none.
 */
export type HashFor = { address: string; signal?: AbortSignal | null } | null;

/** The turn of a request's client (its address, "unknown" without one). */
export function hashTurnOf(client: { ip?: string | null; signal?: AbortSignal | null }): HashFor {
  return { address: client.ip ?? "unknown", signal: client.signal };
}

const inTurn = <T>(by: HashFor, hash: () => Promise<T>): Promise<T> => (by === null ? hash() : inHashTurn(by.address, hash, by.signal));

/** Hashes a password with argon2id, in `by`'s turn. */
export function hashPassword(password: string, by: HashFor): Promise<string> {
  return inTurn(by, () => Bun.password.hash(password, { algorithm: "argon2id" }));
}

/**
 * A real argon2id hash (Bun's parameters, the ones hashPassword uses) of a random string nobody kept:
 * verifying against it when the email is unknown makes "no such user" take as long as "wrong password",
 * so timing does not reveal which emails exist. A constant, so the server computes no hash (64 MiB and a
 * tenth of a second of CPU) at start; a test checks its parameters are still those of hashPassword.
 */
export const DUMMY_HASH = "$argon2id$v=19$m=65536,t=2,p=1$488wMQuH6vafghZB9Lx+lij3yrSLFKgeqPDTInnAUI8$BdGJRiaE0XgS1bv4VHA66Qk1ydLMJ+O7N2/uiby0DPM";

/** Checks a password against a stored hash (or against a dummy hash when there is none, in the same time), in `by`'s turn. */
export function verifyPassword(password: string, hash: string | null | undefined, by: HashFor): Promise<boolean> {
  return inTurn(by, async () => {
    if (!hash) {
      await Bun.password.verify(password, DUMMY_HASH).catch(() => false);
      return false;
    }
    return Bun.password.verify(password, hash).catch(() => false);
  });
}

/** 422 unless the password is a string of 8..256 characters (CONTRACT §7). */
export function checkPassword(password: unknown, field = "password"): string {
  if (typeof password !== "string") throw fieldError(field, "required", `"${field}" is required.`);
  // Characters as field rules count them: an astral character (an emoji) is one, not two UTF-16 units.
  let length = 0;
  for (const _ of password) length++;
  if (length < 8) throw fieldError(field, "min", `"${field}" must be at least 8 characters.`);
  if (length > 256) throw fieldError(field, "max", `"${field}" must be at most 256 characters.`);
  return password;
}

/**
 * The form an email is stored and looked up in: trimmed, NFC-normalised and lower-cased (NFC again after
 * lower-casing, which can decompose). Composed and decomposed `josé@x.com` are one address, one account.
 */
export function emailKey(email: string): string {
  return email.trim().normalize("NFC").toLowerCase().normalize("NFC");
}

// Characters no one can see or type on purpose in an address: controls, format characters (zero-width
// spaces and joiners, bidi controls, the soft hyphen, tags), lone surrogates, line and paragraph
// separators, and the letters and marks that render as nothing (fillers, variation selectors, the
// grapheme joiner, the blank braille pattern).
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\u{e0100}-\u{e01ef}]/u;

/**
 * An email as stored (emailKey); 422 rule `email` when it is not one. IMPORTANT: invisible and control
 * characters are refused, else `ada\u200b@x.com` would be an account of its own that looks like ada's.
 */
export function normalizeEmail(email: unknown, field = "email"): string {
  if (typeof email !== "string" || !email.trim()) throw fieldError(field, "required", `"${field}" is required.`);
  const e = emailKey(email);
  if (e.length > 254 || INVISIBLE.test(e) || !/^[^\s@"<>,;:()\\[\]]+@[^\s@"<>,;:()\\[\]]+\.[^\s@"<>,;:()\\[\].]{2,}$/.test(e) || /\.\./.test(e))
    throw fieldError(field, "email", `"${field}" must be a valid email address.`);
  return e;
}
