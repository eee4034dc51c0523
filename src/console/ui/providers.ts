/** OAuth providers as people know them: the API's ids are `codehost` (GitHub) and `portal` (Google). */
const LABELS: Record<string, string> = { codehost: "GitHub", portal: "Google", oidc: "OpenID Connect" };

/** A provider's display name ("GitHub" for `codehost`); unknown ids are shown as they are. */
export function providerLabel(provider: string): string {
  return LABELS[provider] ?? provider;
}
