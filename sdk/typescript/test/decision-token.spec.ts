import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { DecisionTokenSigner, requestHash as gatewayHash, toolCallHash as gatewayToolCallHash } from '../../../src/core/decision/decision-token';
import { canonicalJson, DecisionTokenError, DecisionTokenVerifier, requestHash, TOOL_CALL_TOKEN_KEY, toolCallHash } from '../src';

/** The gateway's signer (src/core/decision/decision-token.ts) against the SDK's verifier, offline, with a static JWKS. */

const ISSUER = 'http://gateway.test';

function keyPair(kind: 'ed25519' | 'p256', kid: string) {
  const pair = kind === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid };
  return { signing: { privateKey: pair.privateKey, kid, alg: kind === 'ed25519' ? ('EdDSA' as const) : ('ES256' as const) }, jwk };
}

/** Signs `count` tokens in one turn, each for `GET /orders/<i>`. */
function signTurn(signer: DecisionTokenSigner, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, (_, index) => {
      const claims = DecisionTokenSigner.claims({ jti: `aud_${index}`, sub: 'agent_a', org: 'org_a', act: `read:orders/${index}`, req: gatewayHash('GET', `/orders/${index}`, undefined) });
      return new Promise<string>((resolve) => signer.issue(claims, resolve));
    }),
  );
}

describe('decision tokens', () => {
  for (const kind of ['ed25519', 'p256'] as const) {
    it(`verifies every token of a turn, whatever its size (${kind})`, async () => {
      const { signing, jwk } = keyPair(kind, `k-${kind}`);
      const signer = new DecisionTokenSigner(() => signing, () => ISSUER);
      const verifier = new DecisionTokenVerifier({ jwks: { keys: [jwk] }, issuer: ISSUER });
      for (const count of [1, 2, 3, 7, 300]) {
        const tokens = await signTurn(signer, count);
        const signatures = new Set(tokens.map((token) => token.split('~')[0]));
        expect(signatures.size).toBe(Math.ceil(count / 256));
        for (const [index, token] of tokens.entries()) {
          await expect(verifier.verify(token, { method: 'GET', target: `/orders/${index}` })).resolves.toMatchObject({ decisionId: `aud_${index}`, action: `read:orders/${index}` });
        }
      }
    });
  }

  it('refuses a token for another request, another key, a swapped proof, or past its minute', async () => {
    const { signing, jwk } = keyPair('ed25519', 'k1');
    const other = keyPair('ed25519', 'k1');
    const signer = new DecisionTokenSigner(() => signing, () => ISSUER);
    const [first, second] = await signTurn(signer, 2);
    const verifier = new DecisionTokenVerifier({ jwks: { keys: [jwk] }, issuer: ISSUER });
    const problem = (token: string | undefined, target = '/orders/0', nowMs?: number) =>
      verifier.verify(token, { method: 'GET', target }, nowMs).then(
        () => 'accepted',
        (error: DecisionTokenError) => error.problem,
      );
    expect(await problem(first)).toBe('accepted');
    expect(await problem(first, '/orders/1')).toBe('wrong_request');
    expect(await problem(undefined)).toBe('missing');
    expect(await problem('a.b.c')).toBe('malformed');
    expect(await problem(first, '/orders/0', Date.now() + 70_000)).toBe('expired');
    // Claims of one token under the proof of the other: not what was signed.
    const [jws, , proof] = first.split('~');
    expect(await problem(`${jws}~${second.split('~')[1]}~${proof}`, '/orders/1')).toBe('bad_signature');
    const forged = await signTurn(new DecisionTokenSigner(() => other.signing, () => ISSUER), 1);
    expect(await problem(forged[0])).toBe('bad_signature');
    const elsewhere = new DecisionTokenVerifier({ jwks: { keys: [jwk] }, issuer: 'http://other.test' });
    await expect(elsewhere.verify(first, { method: 'GET', target: '/orders/0' })).rejects.toMatchObject({ problem: 'wrong_issuer' });
  });

  it('verifies a token of a rotated P-256 key after one refresh, and made-up keys cannot make it fetch more', async () => {
    // The gateway's JWKS as a server that counts its fetches: first the old key, then both.
    const old = keyPair('p256', 'k-old');
    const rotated = keyPair('p256', 'k-new');
    let published = [old.jwk];
    let fetches = 0;
    const jwks = http.createServer((_request, response) => {
      fetches += 1;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    let now = Date.now();
    const verifier = new DecisionTokenVerifier({ jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`, issuer: ISSUER, clock: () => now });
    const problem = (token: string) =>
      verifier.verify(token, { method: 'GET', target: '/orders/0' }).then(
        (decision) => decision.action,
        (error: DecisionTokenError) => error.problem,
      );
    try {
      const [before] = await signTurn(new DecisionTokenSigner(() => old.signing, () => ISSUER), 1);
      expect([await problem(before), fetches]).toEqual(['read:orders/0', 1]);

      published = [old.jwk, rotated.jwk];
      const [after] = await signTurn(new DecisionTokenSigner(() => rotated.signing, () => ISSUER), 1);
      // Within refreshSeconds of the last fetch the new key is not asked for; past it, one fetch brings it.
      expect([await problem(after), fetches]).toEqual(['unknown_key', 1]);
      now += 31_000;
      expect([await problem(after), fetches]).toEqual(['read:orders/0', 2]);
      expect([await problem(before), fetches]).toEqual(['read:orders/0', 2]);

      // A key the gateway never had: refused after the one fetch it may make; twenty more at once fetch nothing.
      now += 31_000;
      const withKid = (token: string, kid: string) => {
        const [jws, claims, proof] = token.split('~');
        const [header, payload, signature] = jws.split('.');
        const renamed = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(header, 'base64url').toString()), kid })).toString('base64url');
        return `${renamed}.${payload}.${signature}~${claims}~${proof}`;
      };
      expect([await problem(withKid(after, 'made-up-0')), fetches]).toEqual(['unknown_key', 3]);
      const refusals = await Promise.all(Array.from({ length: 20 }, (_, index) => problem(withKid(after, `made-up-${index + 1}`))));
      expect(new Set(refusals)).toEqual(new Set(['unknown_key']));
      expect([await problem(after), fetches]).toEqual(['read:orders/0', 3]);
    } finally {
      await new Promise((resolve) => jwks.close(resolve));
    }
  });

  it('leaves the credential’s query parameter out of the hash, however it is escaped', () => {
    const bare = requestHash({ method: 'get', target: '/search?q=1' }, undefined);
    expect(requestHash({ method: 'GET', target: '/search?q=1&api_key=secret' }, 'api_key')).toBe(bare);
    expect(requestHash({ method: 'GET', target: '/search?%61pi_key=secret&q=1' }, 'api_key')).toBe(bare);
    expect(requestHash({ method: 'GET', target: '/search?q=2&api_key=secret' }, 'api_key')).not.toBe(bare);
    expect(gatewayHash('GET', '/search?q=1', undefined)).toBe(bare);
  });
});

describe('decision tokens of MCP tool calls', () => {
  const { signing, jwk } = keyPair('ed25519', 'k-tools');
  const signer = new DecisionTokenSigner(() => signing, () => ISSUER);
  const verifier = new DecisionTokenVerifier({ jwks: { keys: [jwk] }, issuer: ISSUER });

  function tokenFor(req: string): Promise<string> {
    return new Promise((resolve) => signer.issue(DecisionTokenSigner.claims({ jti: 'aud_tool', sub: 'agent_a', org: 'org_a', act: 'call:files/read_file', req }), resolve));
  }

  async function problem(params: Parameters<DecisionTokenVerifier['verifyToolCall']>[0]): Promise<string> {
    const error = await verifier.verifyToolCall(params).then(
      () => new Error('verified'),
      (thrown: unknown) => thrown,
    );
    if (!(error instanceof DecisionTokenError)) throw error;
    return error.problem;
  }

  it('verifies the token in params._meta for the tool and its arguments, whatever order and spacing their JSON came in', async () => {
    const token = await tokenFor(gatewayToolCallHash('read_file', { path: '/srv/a.txt', options: { lines: 10, from: 1.5 } }));
    const received = JSON.parse(`{"name":"read_file","arguments":{ "options":{"from":1.50,"lines":1e1}, "path":"/srv/a.txt"},"_meta":{"progressToken":1,"${TOOL_CALL_TOKEN_KEY}":"${token}"}}`);
    await expect(verifier.verifyToolCall(received)).resolves.toMatchObject({ decisionId: 'aud_tool', agentId: 'agent_a', orgId: 'org_a', action: 'call:files/read_file' });
  });

  it('refuses a call without a token, with other arguments, for another tool, or with a token of an HTTP request', async () => {
    const token = await tokenFor(gatewayToolCallHash('read_file', { path: '/srv/a.txt' }));
    const meta = { [TOOL_CALL_TOKEN_KEY]: token };
    expect(await problem({ name: 'read_file', arguments: { path: '/srv/a.txt' } })).toBe('missing');
    expect(await problem({ name: 'read_file', arguments: { path: '/srv/a.txt' }, _meta: {} })).toBe('missing');
    expect(await problem({ name: 'read_file', arguments: { path: '/etc/passwd' }, _meta: meta })).toBe('wrong_request');
    expect(await problem({ name: 'delete_file', arguments: { path: '/srv/a.txt' }, _meta: meta })).toBe('wrong_request');
    expect(await problem({ name: 'read_file', _meta: meta })).toBe('wrong_request');
    expect(await problem({ name: 'read_file', arguments: ['/srv/a.txt'] as unknown as Record<string, unknown>, _meta: meta })).toBe('malformed');
    const http = await tokenFor(gatewayHash('POST', '/read_file', Buffer.from('{"path":"/srv/a.txt"}')));
    expect(await problem({ name: 'read_file', arguments: { path: '/srv/a.txt' }, _meta: { [TOOL_CALL_TOKEN_KEY]: http } })).toBe('wrong_request');
  });

  it('binds {} when the arguments are absent or null, as the gateway does', async () => {
    const token = await tokenFor(gatewayToolCallHash('list_files', undefined));
    await expect(verifier.verifyToolCall({ name: 'list_files', _meta: { [TOOL_CALL_TOKEN_KEY]: token } })).resolves.toMatchObject({ decisionId: 'aud_tool' });
    await expect(verifier.verifyToolCall({ name: 'list_files', arguments: {}, _meta: { [TOOL_CALL_TOKEN_KEY]: token } })).resolves.toMatchObject({ decisionId: 'aud_tool' });
    await expect(verifier.verifyToolCall({ name: 'list_files', arguments: null, _meta: { [TOOL_CALL_TOKEN_KEY]: token } })).resolves.toMatchObject({ decisionId: 'aud_tool' });
    expect(toolCallHash('list_files', undefined)).toBe(gatewayHash('TOOLS/CALL', 'list_files', Buffer.from('{}')));
  });

  it('agrees with the gateway on every vector of sdk/fixtures/decision-token-tool-calls.json', async () => {
    const vectors = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../fixtures/decision-token-tool-calls.json'), 'utf8')) as {
      metaKey: string;
      issuer: string;
      now: number;
      jwks: { keys: Array<Record<string, unknown>> };
      cases: Array<{ params: string; canonicalArguments: string; req: string; decisionId: string; token: string }>;
      numbers: Array<[string, string]>;
    };
    expect(vectors.metaKey).toBe(TOOL_CALL_TOKEN_KEY);
    const fixed = new DecisionTokenVerifier({ jwks: vectors.jwks, issuer: vectors.issuer });
    for (const [index, vector] of vectors.cases.entries()) {
      const params = JSON.parse(vector.params) as { name: string; arguments?: Record<string, unknown> };
      expect(canonicalJson(params.arguments ?? {})).toBe(vector.canonicalArguments);
      expect(toolCallHash(params.name, params.arguments)).toBe(vector.req);
      await expect(fixed.verifyToolCall({ ...params, _meta: { [TOOL_CALL_TOKEN_KEY]: vector.token } }, vectors.now * 1000)).resolves.toMatchObject({ decisionId: vector.decisionId });
      const other = vectors.cases[(index + 1) % vectors.cases.length];
      if (other.req !== vector.req) {
        await expect(fixed.verifyToolCall({ ...params, _meta: { [TOOL_CALL_TOKEN_KEY]: other.token } }, vectors.now * 1000)).rejects.toMatchObject({ problem: 'wrong_request' });
      }
    }
    for (const [text, canonical] of vectors.numbers) expect(canonicalJson(JSON.parse(text))).toBe(canonical);
  });
});
