import { expect } from "bun:test";
import { TOTP, URI } from "otpauth";
import type { Page } from "playwright-core";

/** Turns 2FA on for the user of `accessToken` on the server at `baseUrl`; the returned TOTP makes its codes. */
export async function enableTotp(baseUrl: string, accessToken: string): Promise<TOTP> {
  const headers = { authorization: `Bearer ${accessToken}`, "content-type": "application/json" };
  const setup = await fetch(`${baseUrl}/api/v1/auth/2fa/setup`, { method: "POST", headers });
  expect(setup.status).toBe(200);
  const totp = URI.parse(((await setup.json()) as { otpauth_url: string }).otpauth_url) as TOTP;
  const enable = await fetch(`${baseUrl}/api/v1/auth/2fa/enable`, { method: "POST", headers, body: JSON.stringify({ code: totp.generate() }) });
  expect(enable.status).toBe(200);
  return totp;
}

/**
 * On a landing page that asks for the 2FA code: a wrong code is said to be wrong, the right one
 * signs in as `email`. The enabling code's step is used, so the next step's code is given (±1 step).
 */
export async function passCodeForm(page: Page, totp: TOTP, email: string): Promise<void> {
  await page.getByLabel("Code").fill("000000");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("That code is not right. Try the current one.").waitFor();
  await page.getByLabel("Code").fill(totp.generate({ timestamp: Date.now() + 30_000 }));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("You are signed in.").waitFor();
  expect(await page.locator("#signed-in-email").textContent()).toBe(email);
}
