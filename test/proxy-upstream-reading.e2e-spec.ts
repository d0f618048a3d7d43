import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parse } from 'yaml';
import { call } from './support/http-client';
import { createAgent, putPolicies, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { EchoBody, rawRequest, startUpstream, TestUpstream } from './support/upstream';

/**
 * The proxy decides on what the upstream will act on (docs/proxy.md "What the proxy reads as the
 * upstream does"): a JSON body under any content type, compressed or behind a byte order mark;
 * bracket query names as the lists frameworks make of them; no method-override, URL-rewrite or
 * client-address header of the agent's reaches the upstream; and the demo policies' path guards
 * ignore case, as many upstreams do.
 */

const MAX_JSON_BYTES = 64 * 1024;

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, MAX_JSON_BYTES: String(MAX_JSON_BYTES) });
  org = await createOrganization(gateway, 'enterprise', 'Upstream reading org');
  await putPolicies(gateway, org, [{ name: 'big-refunds', action: 'write:refunds*', condition: 'args.amount > 1000', reason: 'refunds over 1000 are refused' }]);
  agent = await createAgent(gateway, org, { name: 'refund-bot', trustTier: 'verified' });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

function post(proxied: string, body: Buffer, headers: Record<string, string>) {
  return rawRequest(gateway.url, `/proxy${proxied}`, { method: 'POST', headers: { authorization: `Bearer ${agent.token}`, ...headers }, body });
}

function answerOf(response: { body: Buffer }): Record<string, unknown> {
  return JSON.parse(response.body.toString()) as Record<string, unknown>;
}

const BIG_REFUND = Buffer.from('{"amount":5000}');
const SMALL_REFUND = Buffer.from('{"amount":5}');

describe('a JSON body is read whatever its declared type', () => {
  it.each(['application/octet-stream', 'text/csv', 'application/xml', 'image/png', 'text/html; charset=utf-8'])('denies {"amount":5000} sent as %s, and the upstream never sees it', async (type) => {
    const target = `/refunds/type-${type.replace(/\W/g, '')}`;
    const answer = await post(target, BIG_REFUND, { 'content-type': type });
    expect([answer.status, answerOf(answer).policy]).toEqual([403, 'big-refunds']);
    expect(upstream.received(target)).toHaveLength(0);
  });

  it('refuses a Content-Type naming more than one media type (400), which upstreams read differently', async () => {
    const answer = await post('/refunds/two-types', BIG_REFUND, { 'content-type': 'application/json, text/plain' });
    expect(answer.status).toBe(400);
    expect(answerOf(answer).message).toContain('Content-Type');
    expect(upstream.received('/refunds/two-types')).toHaveLength(0);
  });

  it('reads a body behind a UTF-8 byte order mark', async () => {
    const answer = await post('/refunds/bom', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), BIG_REFUND]), { 'content-type': 'text/plain' });
    expect([answer.status, answerOf(answer).policy]).toEqual([403, 'big-refunds']);
  });

  it('forwards a small refund under any type, its bytes unchanged', async () => {
    const answer = await post('/refunds/small', SMALL_REFUND, { 'content-type': 'application/octet-stream' });
    expect(answer.status).toBe(200);
    expect(upstream.received('/refunds/small')[0].body.equals(SMALL_REFUND)).toBe(true);
  });
});

describe('a compressed body is read decoded', () => {
  const encodings: Array<[string, (body: Buffer) => Buffer]> = [
    ['gzip', (body) => zlib.gzipSync(body)],
    ['x-gzip', (body) => zlib.gzipSync(body)],
    ['deflate', (body) => zlib.deflateSync(body)],
    ['br', (body) => zlib.brotliCompressSync(body)],
    ['gzip, br', (body) => zlib.brotliCompressSync(zlib.gzipSync(body))],
  ];

  it.each(encodings)('denies {"amount":5000} sent with Content-Encoding: %s', async (encoding, encode) => {
    const target = `/refunds/enc-${encoding.replace(/\W/g, '')}`;
    const answer = await post(target, encode(BIG_REFUND), { 'content-type': 'text/plain', 'content-encoding': encoding });
    expect([answer.status, answerOf(answer).policy]).toEqual([403, 'big-refunds']);
    expect(upstream.received(target)).toHaveLength(0);
  });

  it('forwards a small compressed refund as it was sent, still compressed', async () => {
    const sent = zlib.gzipSync(SMALL_REFUND);
    const answer = await post('/refunds/enc-small', sent, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(answer.status).toBe(200);
    const received = upstream.received('/refunds/enc-small')[0];
    expect(received.headers['content-encoding']).toBe('gzip');
    expect(received.body.equals(sent)).toBe(true);
  });

  it('refuses a body that decodes beyond MAX_JSON_BYTES (413), however small it was sent', async () => {
    const bomb = zlib.gzipSync(Buffer.concat([Buffer.from('{"pad":"'), Buffer.alloc(MAX_JSON_BYTES * 4, 'a'), Buffer.from('","amount":5000}')]));
    expect(bomb.length).toBeLessThan(MAX_JSON_BYTES);
    const answer = await post('/refunds/bomb', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect([answer.status, answerOf(answer).error]).toEqual([413, 'payload_too_large']);
    expect(upstream.received('/refunds/bomb')).toHaveLength(0);
  });

  it('refuses an encoding it cannot decode (415) and a body that is not what its encoding says (400)', async () => {
    const unknown = await post('/refunds/zstd', BIG_REFUND, { 'content-type': 'application/json', 'content-encoding': 'compress' });
    expect([unknown.status, answerOf(unknown).error]).toEqual([415, 'unsupported_media_type']);
    expect(answerOf(unknown).message).toContain('compress');
    const broken = await post('/refunds/broken', BIG_REFUND, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(broken.status).toBe(400);
    expect(upstream.received('/refunds/zstd')).toHaveLength(0);
    expect(upstream.received('/refunds/broken')).toHaveLength(0);
  });
});

describe('bracket query names are read as the lists and objects frameworks make of them', () => {
  it.each(['amount[]=5000', 'amount[0]=5000', 'amount%5B%5D=5000', 'amount[]=5&amount[]=5000', 'amount[x]=5000'])('denies ?%s', async (query) => {
    const answer = await rawRequest(gateway.url, `/proxy/refunds/q?${query}`, { method: 'POST', headers: { authorization: `Bearer ${agent.token}` } });
    expect([answer.status, answerOf(answer).policy]).toEqual([403, 'big-refunds']);
  });

  it('denies a form body with a bracket name', async () => {
    const answer = await post('/refunds/form', Buffer.from('amount[]=5000'), { 'content-type': 'application/x-www-form-urlencoded' });
    expect([answer.status, answerOf(answer).policy]).toEqual([403, 'big-refunds']);
  });

  it('still forwards ?amount=5', async () => {
    expect((await rawRequest(gateway.url, '/proxy/refunds/q-small?amount=5', { method: 'POST', headers: { authorization: `Bearer ${agent.token}` } })).status).toBe(200);
  });
});

describe('what the upstream is told of the request is the gateway’s, never the agent’s', () => {
  it('strips method-override and URL-rewrite headers, and replaces Forwarded and X-Real-IP', async () => {
    const answer = await rawRequest(gateway.url, '/proxy/orders/7', {
      headers: {
        authorization: `Bearer ${agent.token}`,
        'x-http-method-override': 'DELETE',
        'x-http-method': 'DELETE',
        'x-method-override': 'DELETE',
        'x-original-url': '/admin/users',
        'x-rewrite-url': '/admin/users',
        forwarded: 'for=10.9.9.9;host=admin.internal;proto=https',
        'x-real-ip': '10.9.9.9',
        'x-client-ip': '10.9.9.9',
        'true-client-ip': '10.9.9.9',
      },
    });
    expect(answer.status).toBe(200);
    const seen = answerOf(answer) as unknown as EchoBody;
    for (const name of ['x-http-method-override', 'x-http-method', 'x-method-override', 'x-original-url', 'x-rewrite-url', 'x-client-ip', 'true-client-ip']) expect(seen.headers[name]).toBeUndefined();
    expect(seen.method).toBe('GET');
    expect(seen.headers['x-real-ip']).toBe('127.0.0.1');
    expect(seen.headers.forwarded).toMatch(/^for=127\.0\.0\.1;proto=http;host="?127\.0\.0\.1:\d+"?$/);
  });
});

describe('the demo policies guard paths in any case', () => {
  it('denies GET /proxy/ETC/passwd and /proxy/Etc/shadow under the demo policies (config/policies.yaml)', async () => {
    const demo = await createOrganization(gateway, 'enterprise', 'Demo policies org');
    const file = parse(fs.readFileSync(path.join(__dirname, '..', 'config', 'policies.yaml'), 'utf8')) as { policies: Array<{ name: string }> };
    for (const policy of file.policies) {
      const put = await call(gateway.url, 'PUT', `/admin/policies/${policy.name}`, { adminToken: demo.adminToken, body: policy });
      expect([200, 201]).toContain(put.status);
    }
    const reader = await createAgent(gateway, demo, { name: 'reader', trustTier: 'verified' });
    for (const target of ['/ETC/passwd', '/Etc/shadow']) {
      const answer = await rawRequest(gateway.url, `/proxy${target}`, { headers: { authorization: `Bearer ${reader.token}` } });
      expect([target, answer.status, answerOf(answer).policy]).toEqual([target, 403, 'block-sensitive-files']);
    }
    expect((await rawRequest(gateway.url, '/proxy/orders/42', { headers: { authorization: `Bearer ${reader.token}` } })).status).toBe(200);
  });
});
