import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, JWK, JWTPayload, KeyLike, SignJWT } from 'jose';

/** A signing key of the test identity provider. */
export interface IssuerKey {
  kid: string;
  privateKey: KeyLike;
  publicJwk: JWK;
}

/**
 * A real OpenID Connect issuer on loopback, as a managed-identity provider looks to the
 * gateway: a discovery document at /.well-known/openid-configuration naming its JWKS at /jwks,
 * which lists the keys it publishes. Keys can be made without publishing them (a rotation not
 * yet visible) and published later.
 */
export interface TestOidcIssuer {
  url: string;
  /** Paths requested so far, in order. */
  requests: string[];
  newKey(kid: string): Promise<IssuerKey>;
  publish(key: IssuerKey): void;
  /** A token signed with `key` (RS256), with `iss` this issuer unless the claims say otherwise. */
  sign(key: IssuerKey, claims: JWTPayload, options?: { expiresInSeconds?: number }): Promise<string>;
  close(): Promise<void>;
}

export async function startOidcIssuer(): Promise<TestOidcIssuer> {
  const published: JWK[] = [];
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    const path = request.url ?? '';
    requests.push(path);
    const { port } = server.address() as AddressInfo;
    const base = `http://127.0.0.1:${port}`;
    if (path === '/.well-known/openid-configuration') return json(response, { issuer: base, jwks_uri: `${base}/jwks`, id_token_signing_alg_values_supported: ['RS256'] });
    if (path === '/jwks') return json(response, { keys: published });
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    async newKey(kid) {
      const { privateKey, publicKey } = await generateKeyPair('RS256');
      return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
    },
    publish(key) {
      published.push(key.publicJwk);
    },
    async sign(key, claims, options = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: url, iat: now, exp: now + (options.expiresInSeconds ?? 3600), ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
        .sign(key.privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(response: http.ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
