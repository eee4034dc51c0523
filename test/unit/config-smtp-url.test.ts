import { expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";

// The mailer loads its SMTP library with the first mail: a URL it could not use must stop the start instead.
test("SMTP_URL must be an smtp:// or smtps:// URL, and the error does not repeat it", () => {
  for (const bad of ["garbage", "http://mail.example.com", "mail.example.com:587"]) {
    expect(() => loadConfig({}, { SMTP_URL: bad })).toThrow(ConfigError);
    expect(() => loadConfig({}, { SMTP_URL: bad })).not.toThrow(bad);
  }
  expect(loadConfig({}, { SMTP_URL: "smtp://u:p@127.0.0.1:2525" }).smtpUrl).toBe("smtp://u:p@127.0.0.1:2525");
  expect(loadConfig({}, { SMTP_URL: "SMTPS://mail.example.com" }).smtpUrl).toBe("SMTPS://mail.example.com");
  expect(loadConfig({}, {}).smtpUrl).toBeNull();
});
