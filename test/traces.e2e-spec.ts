import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GatewayProcess, gatewayReady, killGateway, launchGateway } from './support/gateway-process';
import { call } from './support/http-client';
import { OtlpReceiver, ReceivedSpan } from './support/otlp-receiver';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually } from './support/processes';
import { TEST_ADMIN_TOKEN, testEnv } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * OpenTelemetry traces (docs/observability.md "Traces"), on the gateway as users start it, sent to a
 * local OTLP/HTTP receiver: a span per decision and per proxied call, in the trace the decision
 * headers name, the proxied call's span the parent the upstream is told of in its traceparent.
 */

let database: OwnDatabase;
let upstream: TestUpstream;
let receiver: OtlpReceiver;
let gateway: GatewayProcess;
let agent: { id: string; token: string };
let apiKey: string;

beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startUpstream();
  receiver = await OtlpReceiver.start();
  gateway = await launchGateway(
    testEnv({ DATABASE_URL: database.url, UPSTREAM_URL: upstream.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%201', LOG_LEVEL: 'info' }),
  );
  await gatewayReady(gateway);
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'traced-agent' } });
  expect(created.status).toBe(201);
  agent = created.body;
  const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'traces' } });
  expect(key.status).toBe(201);
  apiKey = key.body.key;
});

afterAll(async () => {
  if (gateway) await killGateway(gateway);
  await receiver?.close();
  await upstream?.close();
  await database?.dispose();
});

async function spansOf(traceId: string, count: number): Promise<ReceivedSpan[]> {
  await eventually(async () => receiver.spans.filter((span) => span.traceId === traceId).length >= count, 10_000, `${count} spans of trace ${traceId}`);
  return receiver.spans.filter((span) => span.traceId === traceId);
}

it('sends a span of each proxied call, with its decision inside, in the trace of X-Service-Trace-Id, parent of the upstream’s', async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const response = await call(gateway.url, 'GET', '/proxy/api/items?limit=1', { bearer: agent.token, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('x-service-trace-id')).toBe(traceId);
  const sent = upstream.received('/api/items').at(-1)!;
  const upstreamParent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(sent.headers.traceparent));
  expect(upstreamParent?.[1]).toBe(traceId);

  const spans = await spansOf(traceId, 2);
  const exchange = spans.find((span) => span.name === 'GET /proxy/*')!;
  const decision = spans.find((span) => span.name === 'decide')!;
  expect(exchange).toMatchObject({
    service: 'agentgov-gateway',
    spanId: upstreamParent![2],
    kind: 2,
    attributes: { 'http.request.method': 'GET', 'http.route': '/proxy/*', 'url.path': '/api/items', 'http.response.status_code': 200, 'agentgov.upstream_status': 200 },
  });
  expect(exchange.parentSpanId ?? '').toBe('');
  expect(decision).toMatchObject({
    parentSpanId: exchange.spanId,
    attributes: {
      'agentgov.source': 'proxy',
      'agentgov.decision': 'allow',
      'agentgov.enforced': true,
      'agentgov.policy': 'default',
      'agentgov.agent_id': agent.id,
      'agentgov.action': 'read:api/items',
      'agentgov.trace_id': traceId,
    },
  });
  expect(decision.attributes['agentgov.decision_id']).toBe(exchange.attributes['agentgov.decision_id']);
  expect(BigInt(exchange.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(decision.endTimeUnixNano));
  expect(receiver.exportHeaders[0]['x-collector-key']).toBe('k 1');
});

it('sends a span of each PDP decision, a client’s trace id of another form mapped to a W3C one as the upstream traceparent maps it', async () => {
  const clientTraceId = 'session-42-step-7';
  const check = await call<{ decisionId: string }>(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' }, headers: { 'x-api-key': apiKey, 'x-trace-id': clientTraceId } });
  expect(check.status).toBe(200);
  const w3c = createHash('sha256').update(clientTraceId).digest('hex').slice(0, 32);
  const [span] = await spansOf(w3c, 1);
  expect(span).toMatchObject({
    name: 'decide',
    kind: 2,
    spanId: check.body.decisionId.slice(-16),
    attributes: { 'agentgov.source': 'check', 'agentgov.decision': 'allow', 'agentgov.agent_id': agent.id, 'agentgov.trace_id': clientTraceId, 'agentgov.decision_id': check.body.decisionId, 'agentgov.status': 200 },
  });
});

it('loads no OpenTelemetry SDK or exporter unless OTEL_EXPORTER_OTLP_ENDPOINT is set (the sidecar, which shares the telemetry)', () => {
  const root = path.resolve(__dirname, '../dist/src');
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-traces-off-'));
  const loadedWith = (env: Record<string, string>): string[] => {
    const script = `
      const { SidecarConfig } = require(${JSON.stringify(path.join(root, 'sidecar/sidecar-config.js'))});
      const { createSidecar } = require(${JSON.stringify(path.join(root, 'sidecar/sidecar-app.js'))});
      const pino = require('pino');
      const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://127.0.0.1:9', ADMIN_TOKEN: 'x', CACHE_DIR: ${JSON.stringify(cacheDir)}, ...${JSON.stringify(env)} });
      createSidecar(config, pino({ level: 'silent' })).then(async (app) => {
        const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\/]@opentelemetry[\\/]/.test(file)).map((file) => file.split(/node_modules[\\/]/).pop().split(/[\\/]/).slice(0, 2).join('/'));
        await app.close();
        process.stdout.write(JSON.stringify([...new Set(loaded)].sort()));
        process.exit(0);
      });`;
    return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: path.resolve(__dirname, '..') })) as string[];
  };
  try {
    // prom-client's process metrics load the API package (a few kilobytes of interfaces) whatever the settings.
    expect(loadedWith({}).filter((name) => name !== '@opentelemetry/api')).toEqual([]);
    expect(loadedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http']));
  } finally {
    fs.rmSync(cacheDir, { recursive: true, force: true });
  }
});
