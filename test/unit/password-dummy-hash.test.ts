import { expect, test } from "bun:test";
import { DUMMY_HASH, hashPassword, verifyPassword } from "../../src/users/passwords.ts";

/** `$argon2id$v=19$m=65536,t=2,p=1$salt$hash` → the algorithm, version and cost parameters. */
const parameters = (hash: string) => hash.split("$").slice(1, 4).join("$");

test("the dummy hash an unknown email is checked against has the parameters of a real password hash", async () => {
  // Verifying costs what the parameters say: the same ones make an unknown email as slow as a wrong password.
  expect(parameters(DUMMY_HASH)).toBe(parameters(await hashPassword("a password of a user", null)));
});

test("an unknown email (no stored hash) is refused whatever the password", async () => {
  expect(await verifyPassword("anything at all", null, null)).toBe(false);
  expect(await verifyPassword("", undefined, null)).toBe(false);
});
