import { generateKeyPairSync } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

/** An account the test OpenID provider knows. */
export interface TestAccount {
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** A public client (no secret, PKCE only) with the same redirect address. */
  publicClientId: string;
  accounts: Map<string, TestAccount>;
  /** The account the next login signs in as (the interaction logs in without a form). */
  loginAs: string;
  /** How often the discovery document was fetched. */
  discoveryHits: number;
  close(): Promise<void>;
}

/**
 * A real OpenID provider (`oidc-provider`) on 127.0.0.1 with one confidential client.
 * Its login and consent interactions finish themselves for `loginAs`, so a test can walk
 * the whole browser flow with redirects and cookies.
 */
export async function startOidcProvider(redirectUri: string): Promise<TestOidcProvider> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, s) => s.end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: "jwk" }), kid: "test-rs256", alg: "RS256", use: "sig" };
  const out: TestOidcProvider = {
    issuer,
    clientId: "baas-test-client",
    // Characters that must be form-encoded in HTTP Basic client authentication (RFC 6749 2.3.1).
    clientSecret: "baas test+client/secret%41:=",
    publicClientId: "baas-public-client",
    accounts: new Map(),
    loginAs: "",
    discoveryHits: 0,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: out.clientId,
        client_secret: out.clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
      {
        client_id: out.publicClientId,
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: ["oidc-test-cookie-key"] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => {
      const acc = out.accounts.get(sub);
      if (!acc) return undefined;
      return { accountId: sub, claims: () => ({ sub, ...acc }) };
    },
  });
  const callback = provider.callback();
  handler = (req, res) => {
    if (req.url === "/.well-known/openid-configuration") out.discoveryHits++;
    if (!req.url?.startsWith("/interaction/")) return callback(req, res);
    finishInteraction(provider, req, res, out.loginAs).catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  };
  return out;
}

async function finishInteraction(provider: Provider, req: IncomingMessage, res: ServerResponse, accountId: string) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === "login") {
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
  grant.addOIDCScope(String(details.params.scope));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}
