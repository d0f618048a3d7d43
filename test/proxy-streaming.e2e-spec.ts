import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { call } from './support/http-client';
import { createOrganization, startGateway, TestGateway } from './support/test-gateway';
import { rawRequest, RawRequestOptions, startUpstream, STREAM_BYTE, TestUpstream, UpstreamRequest } from './support/upstream';

/** Bodies through /proxy/*: streamed byte for byte both ways, bounded by PROXY_MAX_BODY_BYTES (docs/proxy.md). */

// jest-circus reads testTimeout only from the top-level config, not from the e2e project's entry.

const MIB = 1024 * 1024;

let upstream: TestUpstream;
let gateway: TestGateway;
let limited: TestGateway;
let token: string;
let limitedToken: string;
let traceSeq = 0;

async function agentToken(on: TestGateway, policies: string[] = []): Promise<string> {
  const org = await createOrganization(on, 'enterprise', 'Streaming org');
  for (const policy of policies) {
    const name = /^name: (\S+)/.exec(policy)![1];
    const put = await call(on.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: policy, headers: { 'content-type': 'application/yaml' } });
    expect(put.status).toBe(201);
  }
  const created = await call<{ token: string }>(on.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'streamer' } });
  expect(created.status).toBe(201);
  return created.body.token;
}

// Reads a JSON body field, so the gateway must buffer and parse JSON bodies on write:inspected*.
const INSPECTING_POLICY = `name: inspect-amount
match: { action: "write:raw/inspected*" }
rules:
  - condition: args.amount > 100
    action: deny
    reason: Too much
`;

beforeAll(async () => {
  upstream = await startUpstream();
  // Streaming uploads: with decision tokens a body is read whole first, its hash being signed (docs/proxy.md).
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, DECISION_TOKENS: 'false' });
  limited = await startGateway({ UPSTREAM_URL: upstream.url, PROXY_MAX_BODY_BYTES: '1000' });
  token = await agentToken(gateway, [INSPECTING_POLICY]);
  limitedToken = await agentToken(limited, [INSPECTING_POLICY]);
});
afterAll(async () => {
  await gateway.close();
  await limited.close();
  await upstream.close();
});

function send(on: TestGateway, bearer: string, path: string, options: RawRequestOptions & { headers?: Record<string, string> }) {
  const trace = `stream-${process.pid}-${++traceSeq}`;
  const response = rawRequest(on.url, path, { ...options, headers: { authorization: `Bearer ${bearer}`, 'x-trace-id': trace, ...options.headers } });
  return { trace, response };
}

function received(trace: string) {
  return upstream.requests.filter((request) => request.headers['x-trace-id'] === trace);
}

function split(body: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) chunks.push(body.subarray(at, at + size));
  return chunks;
}

describe('binary bodies', () => {
  it.each(['application/octet-stream', 'image/png'])('round-trips a 1 MiB random %s request body byte for byte', async (contentType) => {
    const body = randomBytes(MIB);
    const { trace, response } = send(gateway, token, '/proxy/raw/upload', { method: 'POST', headers: { 'content-type': contentType }, body });
    const answer = await response;
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe(contentType);
    expect(answer.body.length).toBe(MIB);
    expect(answer.body.equals(body)).toBe(true);
    const [upstreamSaw] = received(trace);
    expect(upstreamSaw.headers['content-type']).toBe(contentType);
    expect(upstreamSaw.headers['content-length']).toBe(String(MIB));
    expect(upstreamSaw.body.equals(body)).toBe(true);
  });

  it('streams a 1 MiB random response body byte for byte', async () => {
    const { trace, response } = send(gateway, token, '/proxy/bytes/1048576', {});
    const answer = await response;
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/octet-stream');
    expect(answer.headers['x-service-decision']).toBe('allow');
    const [upstreamSaw] = received(trace);
    expect(upstreamSaw.sent).toHaveLength(MIB);
    expect(answer.body.equals(upstreamSaw.sent!)).toBe(true);
  });

  it('streams a chunked request body (no Content-Length) through', async () => {
    const body = randomBytes(MIB + 12345);
    const { trace, response } = send(gateway, token, '/proxy/raw/chunked', { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: split(body, 16 * 1024) });
    const answer = await response;
    expect(answer.status).toBe(200);
    expect(answer.body.equals(body)).toBe(true);
    const [upstreamSaw] = received(trace);
    expect(upstreamSaw.method).toBe('PUT');
    expect(upstreamSaw.headers['transfer-encoding']).toBe('chunked');
    expect(upstreamSaw.body.equals(body)).toBe(true);
  });

  it('forwards a chunked JSON body a policy inspected, unchanged', async () => {
    const body = Buffer.from(JSON.stringify({ amount: 5, items: Array.from({ length: 2000 }, (_, i) => ({ i, label: `item ${i} ✓` })) }));
    const { trace, response } = send(gateway, token, '/proxy/raw/inspected', { method: 'POST', headers: { 'content-type': 'application/json' }, body: split(body, 1000) });
    const answer = await response;
    expect(answer.status).toBe(200);
    expect(answer.body.equals(body)).toBe(true);
    expect(received(trace)[0].body.equals(body)).toBe(true);

    const denied = send(gateway, token, '/proxy/raw/inspected', { method: 'POST', headers: { 'content-type': 'application/json' }, body: split(Buffer.from('{"amount": 500}'), 4) });
    expect((await denied.response).status).toBe(403);
    expect(received(denied.trace)).toHaveLength(0);
  });
});

/** A GET through the gateway whose answer the test reads (or not) at its own pace. */
function openStream(path: string): { trace: string; response: Promise<http.IncomingMessage>; request: http.ClientRequest } {
  const trace = `stream-${process.pid}-${++traceSeq}`;
  const { hostname, port } = new URL(gateway.url);
  const request = http.request({ hostname, port, path, headers: { authorization: `Bearer ${token}`, 'x-trace-id': trace }, agent: false });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    request.on('response', resolve);
    request.on('error', reject);
  });
  request.end();
  return { trace, response, request };
}

async function upstreamRequest(trace: string): Promise<UpstreamRequest> {
  for (let waited = 0; waited < 5000; waited += 20) {
    const [request] = received(trace);
    if (request?.streamed) return request;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the upstream never answered ${trace}`);
}

describe('streamed answers', () => {
  it('holds a fast upstream back while the client does not read, then relays every byte', async () => {
    const chunks = 1024; // 64 MiB: more than the sockets on the way can hold
    const { trace, response } = openStream(`/proxy/stream/${chunks}`);
    const answer = await response;
    answer.pause();
    const upstreamSide = await upstreamRequest(trace);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const writtenWhilePaused = upstreamSide.streamed!.written; 
    expect(writtenWhilePaused).toBeLessThan(chunks * 64 * 1024 * 0.75);

    let bytes = 0;
    let foreign = 0;
    answer.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      for (const byte of chunk) if (byte !== STREAM_BYTE) foreign++;
    });
    answer.resume();
    await new Promise((resolve) => answer.on('end', resolve));
    expect(answer.statusCode).toBe(200);
    expect(bytes).toBe(chunks * 64 * 1024);
    expect(foreign).toBe(0);
  });

  it('stops the upstream answer when the client goes away while the upstream is silent', async () => {
    const { trace, response, request } = openStream('/proxy/hold');
    const answer = await response;
    await new Promise((resolve) => answer.once('data', resolve));
    request.destroy();
    const upstreamSide = await upstreamRequest(trace);
    for (let waited = 0; waited < 5000 && !upstreamSide.streamed!.cutOff; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(upstreamSide.streamed!.cutOff).toBe(true);
  });
});

describe('PROXY_MAX_BODY_BYTES', () => {
  const cases: Array<[what: string, body: (bytes: Buffer) => Buffer | Buffer[]]> = [
    ['with Content-Length', (bytes) => bytes],
    ['chunked', (bytes) => split(bytes, 300)],
  ];

  it.each(cases)('answers 413 payload_too_large for a body over the limit sent %s', async (_what, shape) => {
    const { trace, response } = send(limited, limitedToken, '/proxy/raw/too-big', { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: shape(randomBytes(1001)) });
    const answer = await response;
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    expect(received(trace)).toHaveLength(0);
  });

  it.each(cases)('forwards a body of exactly the limit sent %s', async (_what, shape) => {
    const body = randomBytes(1000);
    const { trace, response } = send(limited, limitedToken, '/proxy/raw/at-limit', { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: shape(body) });
    const answer = await response;
    expect(answer.status).toBe(200);
    expect(answer.body.equals(body)).toBe(true);
    expect(received(trace)[0].body.equals(body)).toBe(true);
  });

  it.each(cases)('answers 413 for a JSON body a policy would inspect, over the limit, sent %s', async (_what, shape) => {
    const body = Buffer.from(JSON.stringify({ amount: 1, pad: 'x'.repeat(1500) }));
    const { trace, response } = send(limited, limitedToken, '/proxy/raw/inspected', { method: 'POST', headers: { 'content-type': 'application/json' }, body: shape(body) });
    const answer = await response;
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    expect(received(trace)).toHaveLength(0);
  });
});
