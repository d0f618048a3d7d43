import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { createPublicKey } from 'node:crypto';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { startUpstream, TestUpstream } from './support/upstream';
import { FakePaymentProvider } from './support/fake-payment-provider';

/**
 * Bad input is a 4xx naming the problem, never a 5xx (docs/security.md "Bad input"). Walks every
 * operation of the gateway's and the sidecar's OpenAPI documents (their GET /docs-json), and the
 * routes those leave out (the approval links, the edge routes a sidecar calls), as an attacker
 * would: no body, an empty object, every field of a plausible body in turn of a wrong type,
 * oversize or holding a lone UTF-16 surrogate, bodies of the wrong media type or with a
 * Content-Encoding they are not in, garbage path and query parameters; with the operation's own
 * credentials, and the lighter cases also without any and with the other kind. The built gateway
 * (its own database, so no admin call here touches another file's data) and a sidecar beside it
 * run as processes, the way users start them.
 */

const ADMIN_TOKEN = 'hostile-input-admin-token-0123456789abcdef';
const CONCURRENCY = 8;
const REQUEST_TIMEOUT_MS = 15_000;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-hostile-'));

type Schema = Record<string, unknown>;
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}
interface Operation {
  parameters?: Array<{ name: string; in: string; schema?: Schema }>;
  requestBody?: { content: Record<string, { schema?: Schema }> };
  security?: Array<Record<string, string[]>>;
}
/** One operation of one service, with the document its schemas are resolved in. */
interface Route {
  service: 'gateway' | 'sidecar';
  url: string;
  method: string;
  template: string;
  operation: Operation;
  document: OpenApiDocument;
  /** Header sets that are the operation's own credentials (one per security requirement). */
  credentials: Record<string, string>;
}
interface Probe {
  route: Route;
  name: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}
interface Failure {
  service: string;
  method: string;
  path: string;
  case: string;
  status: number | string;
  body: string;
}

let database: OwnDatabase;
let upstream: TestUpstream;
let payments: FakePaymentProvider;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
const credentials: Record<'admin' | 'agent' | 'apiKey' | 'sidecar', Record<string, string>> = { admin: {}, agent: {}, apiKey: {}, sidecar: {} };
/** Ids that exist, put where a plausible body or path names an agent or the organization, so the cases get past the lookups. */
const known = { agentId: '', orgId: '' };

beforeAll(async () => {
  [database, upstream, payments] = await Promise.all([ownDatabase(), startUpstream(), FakePaymentProvider.start('sk_test_hostile_input')]);
  const keyFile = path.join(scratch, 'signing-key.pem');
  gateway = launch(GATEWAY_MAIN, await freePort(), {
    DATABASE_URL: database.url,
    DATABASE_POOL_MAX: '4',
    PDP_GRPC_PORT: '0',
    ADMIN_TOKEN,
    DEFAULT_PLAN: 'enterprise',
    PUBLIC_URL: 'http://gateway.test',
    SIGNING_KEY_FILE: keyFile,
    DATA_DIR: path.join(scratch, 'data'),
    POLICIES_FILE: '/dev/null',
    UPSTREAM_URL: upstream.url,
    RATE_LIMIT_RPM: '1000000',
    // Billing configured against a local fake of the provider, so its routes read what they are sent.
    PAYMENT_SECRET_KEY: 'sk_test_hostile_input',
    PAYMENT_WEBHOOK_SECRET: 'whsec_hostile_input_0123456789',
    PAYMENT_API_URL: payments.url,
    PAYMENT_PRICE_STARTER_MONTHLY: 'price_hostile_starter_month',
    PAYMENT_PRICE_STARTER_ANNUAL: 'price_hostile_starter_year',
    PAYMENT_PRICE_PROFESSIONAL_MONTHLY: 'price_hostile_pro_month',
    PAYMENT_PRICE_PROFESSIONAL_ANNUAL: 'price_hostile_pro_year',
    LOG_LEVEL: 'error',
  });
  await waitFor(gateway, '/health', (status) => status === 200);
  const admin = <T>(method: string, route: string, body: unknown) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body });
  const agent = await admin<{ id: string; token: string }>('POST', '/admin/agents', { name: 'hostile-input agent' });
  known.agentId = agent.body.id;
  known.orgId = (await admin<{ id: string }>('GET', '/admin/organization', undefined)).body.id;
  const apiKey = await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'hostile-input adapter' });
  const sidecarToken = await admin<{ token: string }>('POST', '/admin/sidecar-tokens', { name: 'hostile-input edge' });
  expect([agent.status, apiKey.status, sidecarToken.status]).toEqual([201, 201, 201]);
  credentials.admin = { 'x-admin-token': ADMIN_TOKEN, authorization: `Bearer ${ADMIN_TOKEN}` };
  credentials.agent = { authorization: `Bearer ${agent.body.token}` };
  credentials.apiKey = { 'x-api-key': apiKey.body.key };
  credentials.sidecar = { 'x-admin-token': sidecarToken.body.token };
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: sidecarToken.body.token,
    CACHE_DIR: path.join(scratch, 'cache'),
    UPSTREAM_URL: upstream.url,
    BUNDLE_SYNC_INTERVAL: '1',
    BUNDLE_PUBLIC_KEY: createPublicKey(fs.readFileSync(keyFile)).export({ type: 'spki', format: 'pem' }).toString(),
    LOG_LEVEL: 'error',
  });
  await waitFor(sidecar, '/health', (status, body) => status === 200 && body.bundleVersion !== null);
}, 120_000);

afterAll(async () => {
  await Promise.all([sidecar?.kill(), gateway?.kill()]);
  await Promise.all([upstream?.close(), payments?.close(), database?.dispose()]);
  fs.rmSync(scratch, { recursive: true, force: true });
});

it('answers no operation of the gateway or the sidecar with a 5xx, whatever is sent, with or without credentials', async () => {
  const routes = [...(await routesOf('gateway', gateway.url)), ...(await routesOf('sidecar', sidecar.url)), ...undocumentedRoutes()];
  expect(routes.filter((route) => route.service === 'gateway').length).toBeGreaterThan(60);
  expect(routes.filter((route) => route.service === 'sidecar').length).toBeGreaterThan(8);
  const probes = routes.flatMap(probesOf);
  // Bounded: a few thousand requests.
  expect(probes.length).toBeGreaterThan(2000);
  expect(probes.length).toBeLessThan(12_000);

  const failures = await send(probes);
  // Both processes outlived it all.
  expect([gateway.child.exitCode, sidecar.child.exitCode]).toEqual([null, null]);
  const report = failures.map((failure) => `${failure.service} ${failure.method} ${failure.path} [${failure.case}] -> ${failure.status} ${failure.body}`);
  const logged = [gateway, sidecar].flatMap((process) => process.output().stdout.split('\n').filter((line) => line.includes('unhandled')).slice(0, 20));
  expect({ failures: report.length, report: report.slice(0, 200), logged }).toEqual({ failures: 0, report: [], logged: [] });
}, 240_000);

it('names the problem of each kind of bad input it once answered 500 to', async () => {
  const admin = (method: string, route: string, body: unknown, headers: Record<string, string> = {}) => call(gateway.url, method, route, { headers: { ...credentials.admin, ...headers }, body });
  // A body that does not inflate as its Content-Encoding says (zlib's error reached the error filter as an unknown one).
  const notGzip = await admin('POST', '/admin/agents', '{"name":"x"}', { 'content-type': 'application/json', 'content-encoding': 'gzip' });
  expect([notGzip.status, notGzip.body]).toEqual([400, { error: 'invalid_request', message: 'Request body is not valid gzip data (Content-Encoding: gzip)' }]);
  const notBrotli = await admin('POST', '/admin/agents', '{"name":"x"}', { 'content-type': 'application/json', 'content-encoding': 'br' });
  expect([notBrotli.status, notBrotli.body]).toEqual([400, { error: 'invalid_request', message: 'Request body is not valid br data (Content-Encoding: br)' }]);
  // null for a field that may be left out but is not documented nullable (IsOptional let it through to `.trim()`).
  const nullSigners = await admin('PUT', '/admin/policy-git', { url: 'https://git.example.com/acme/policies.git', allowedSigners: null });
  expect([nullSigners.status, nullSigners.body.message]).toEqual([400, 'allowedSigners must not be null (leave it out instead)']);
  const nullTier = await admin('POST', '/admin/agents', { name: 'null tier', trustTier: null, tags: null });
  expect([nullTier.status, nullTier.body.message]).toEqual([400, 'trustTier must not be null (leave it out instead); tags must not be null (leave it out instead)']);
  // A lone surrogate: IsEmail percent-encodes its input and threw.
  const surrogate = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: 'ada\ud800@example.com', plan: 'starter', interval: 'month' } });
  expect([surrogate.status, surrogate.body.message]).toEqual([400, 'email must not contain lone surrogates (UTF-16 halves that UTF-8 cannot carry)']);
  // The edge approval routes without a body (it was undefined, and read as an object).
  for (const route of ['/api/v1/edge/approvals', '/api/v1/edge/approvals/apr_none/redeem']) {
    const bodiless = await call(gateway.url, 'POST', route, { headers: credentials.sidecar });
    expect([route, bodiless.status, bodiless.body.error]).toEqual([route, 400, 'invalid_request']);
  }
});

it('honours no method override on its own routes: a POST asking to be a DELETE stays a POST', async () => {
  const override = await call(gateway.url, 'POST', `/admin/agents/${known.agentId}?_method=DELETE`, {
    headers: { ...credentials.admin, 'x-http-method-override': 'DELETE', 'x-method-override': 'DELETE', 'x-http-method': 'DELETE' },
    body: { _method: 'DELETE' },
  });
  expect([override.status, override.body.error]).toEqual([404, 'not_found']);
  const agent = await call(gateway.url, 'GET', `/admin/agents/${known.agentId}`, { headers: credentials.admin });
  expect([agent.status, agent.body.status]).toEqual([200, 'active']);
});

async function routesOf(service: Route['service'], url: string): Promise<Route[]> {
  const answer = await call(url, 'GET', '/docs-json');
  expect(answer.status).toBe(200);
  const document = answer.body as unknown as OpenApiDocument;
  const routes: Route[] = [];
  for (const [template, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      routes.push({ service, url, method: method.toUpperCase(), template, operation, document, credentials: credentialsOf(operation) });
    }
  }
  return routes;
}

function credentialsOf(operation: Operation): Record<string, string> {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  const sets: Record<string, Record<string, string>> = { 'admin-token': { 'x-admin-token': ADMIN_TOKEN }, 'admin-bearer': { authorization: `Bearer ${ADMIN_TOKEN}` }, 'agent-token': credentials.agent, 'api-key': credentials.apiKey };
  return Object.assign({}, ...schemes.map((scheme) => sets[scheme] ?? {})) as Record<string, string>;
}

/** Routes the documents leave out (ApiExcludeController): the approval links' pages and the edge calls of a sidecar. */
function undocumentedRoutes(): Route[] {
  const document: OpenApiDocument = { paths: {} };
  const json = (schema: Schema) => ({ content: { 'application/json': { schema } } });
  const subject = { type: 'object', properties: { orgId: { type: 'string' }, agentId: { type: 'string' }, agentName: { type: 'string' }, source: { type: 'string' }, action: { type: 'string' }, derivedAction: { type: 'string' }, plugin: { type: 'string' }, function: { type: 'string' }, method: { type: 'string' }, path: { type: 'string' }, holds: { type: 'array', items: { type: 'string' } }, fingerprint: { type: 'string' }, traceId: { type: 'string' } } };
  const form = { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { expires: { type: 'string' }, token: { type: 'string' }, comment: { type: 'string' } } } } } };
  const routes: Array<[string, string, Operation, Record<string, string>]> = [
    ['GET', '/approvals/{id}/{verb}', { parameters: [{ name: 'expires', in: 'query' }, { name: 'token', in: 'query' }] }, {}],
    ['POST', '/approvals/{id}/{verb}', { requestBody: form }, {}],
    ['GET', '/api/v1/edge/approvals/{id}', {}, credentials.sidecar],
    ['POST', '/api/v1/edge/approvals', { requestBody: json({ type: 'object', properties: { subject, policy: { type: 'string' }, rule: { type: 'string' }, reason: { type: 'string' }, approvers: { type: 'array', items: { type: 'string' } }, timeoutMs: { type: 'integer', example: 60000 } } }) }, credentials.sidecar],
    ['POST', '/api/v1/edge/approvals/{id}/redeem', { requestBody: json({ type: 'object', properties: { subject } }) }, credentials.sidecar],
    ['POST', '/api/v1/edge/tool-pins', { requestBody: json({ type: 'object', properties: { server: { type: 'string' }, tools: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, description: { type: 'string' } } } } } }) }, credentials.sidecar],
  ];
  return routes.map(([method, template, operation, own]) => ({ service: 'gateway', url: gateway.url, method, template, operation, document, credentials: own }));
}

/** Path parameters no client would send. */
const GARBAGE_SEGMENTS = ['%ED%A0%80', '%FF%FE', '%00', '%25', '%', '..', '%2E%2E%2F%2E%2E', 'a%2Fb', 'x'.repeat(4000), '%F0%9F%98%80', '%20', '-1', '1e400', '99999999999999999999999', 'null', '%5B%5D', '%7B%7D', '%27%22%3C%3E', '%C0%AF'];
/** Query values of every wrong shape: `name=…` after the name, or a whole query. */
const GARBAGE_QUERIES = (name: string) => [`${name}=`, `${name}=abc`, `${name}=-1`, `${name}=1e400`, `${name}=99999999999999999999999`, `${name}=${'x'.repeat(4000)}`, `${name}=%ED%A0%80`, `${name}=%00`, `${name}=%FF`, `${name}=1&${name}=2`, `${name}[a]=1`, `${name}[]=1`, `${name}[0][b]=1`];

const LONG_STRING = 'x'.repeat(20_000);
const GZIP_GARBAGE = gzipSync(Buffer.from('{not json'));
/** 8 MiB of spaces in 8 KiB: past every body limit once inflated. */
const GZIP_BOMB = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20));
const LONE_SURROGATES = ['\ud800', 'name \udfff end', '\udc00\ud800'];
/** Values of every JSON type but the field's own, oversize ones and lone surrogates. */
function wrongValues(schema: Schema): Array<[string, unknown]> {
  const type = schema.type as string | undefined;
  const values: Array<[string, unknown]> = [
    ['null', null],
    ['true', true],
    ['[]', []],
    ['{}', {}],
    ['[{}]', [{}]],
    ['{"a":{"b":[null]}}', { a: { b: [null] } }],
  ];
  if (type !== 'string') values.push(['"text"', 'text'], ['""', '']);
  if (type !== 'number' && type !== 'integer') values.push(['12345', 12345]);
  if (type === 'string' || type === undefined) values.push(['long string', LONG_STRING], ...LONE_SURROGATES.map((value, index): [string, unknown] => [`lone surrogate ${index}`, value]), ['date-ish', '2026-13-45T99:99:99Z']);
  if (type === 'number' || type === 'integer') values.push(['1e308', 1e308], ['-1e308', -1e308], ['2^64', 18446744073709551616], ['-1', -1], ['0.5', 0.5], ['"5"', '5']);
  if (type === 'array') values.push(['array of 10000', new Array(10_000).fill('x')], ['array of nulls', [null, null]], ['array of surrogates', ['\ud800']]);
  if (type === 'object' || schema.$ref !== undefined) values.push(['object with surrogate key', { '\ud800': 1 }]);
  return values;
}

function resolve(schema: Schema | undefined, document: OpenApiDocument, depth = 0): Schema {
  if (schema === undefined || depth > 8) return {};
  if (typeof schema.$ref === 'string') return resolve(document.components?.schemas?.[schema.$ref.split('/').pop()!], document, depth + 1);
  const alternatives = (schema.allOf ?? schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives !== undefined && alternatives.length > 0) return { ...schema, ...resolve(alternatives[0], document, depth + 1) };
  return schema;
}

/** An example id of an agent or organization as one that exists. */
function existing(example: unknown): unknown {
  if (typeof example !== 'string') return example;
  if (example.startsWith('agent_')) return known.agentId;
  return example.startsWith('org_') ? known.orgId : example;
}

/** A body the operation would plausibly take: examples, defaults, the first enum value, else a value of the declared type. */
function plausible(schema: Schema, document: OpenApiDocument, depth = 0): unknown {
  const resolved = resolve(schema, document);
  if (resolved.example !== undefined) return existing(resolved.example);
  if (resolved.default !== undefined) return resolved.default;
  if (Array.isArray(resolved.enum)) return resolved.enum[0];
  switch (resolved.type) {
    case 'string':
      return resolved.format === 'date-time' ? new Date().toISOString() : 'hostile-probe';
    case 'integer':
    case 'number':
      return typeof resolved.minimum === 'number' ? resolved.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return depth > 4 ? [] : [plausible((resolved.items as Schema) ?? {}, document, depth + 1)];
    default: {
      const properties = (resolved.properties ?? {}) as Record<string, Schema>;
      if (depth > 4) return {};
      return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, plausible(property, document, depth + 1)]));
    }
  }
}

/** Every case for one route: the full set with its own credentials, the light ones with none and with the other kinds. */
function probesOf(route: Route): Probe[] {
  const own = route.credentials;
  const others = [{}, credentials.admin, credentials.agent].filter((set) => JSON.stringify(set) !== JSON.stringify(own));
  const full = casesOf(route, true);
  const light = casesOf(route, false);
  return [...full.map((probe) => withHeaders(probe, own, 'own credentials')), ...others.flatMap((set) => light.map((probe) => withHeaders(probe, set, Object.keys(set).length === 0 ? 'no credentials' : `credentials ${Object.keys(set).join('+')}`)))];
}

function withHeaders(probe: Probe, headers: Record<string, string>, label: string): Probe {
  return { ...probe, name: `${probe.name}, ${label}`, headers: { ...headers, ...probe.headers } };
}

function casesOf(route: Route, full: boolean): Probe[] {
  const params = (route.operation.parameters ?? []).filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
  const templateParams = [...route.template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
  const content = route.operation.requestBody?.content ?? {};
  const schema = resolve(content['application/json']?.schema ?? content['application/x-www-form-urlencoded']?.schema ?? { type: 'object' }, route.document);
  const body = plausible(schema, route.document) as Record<string, unknown>;
  const plausibleParam = (name: string) => {
    if (name === 'verb') return 'approve';
    if (name === 'path') return 'hostile/probe';
    // Not on DELETE: revoking the agent would leave every later case of its token at the 401.
    if (route.method !== 'DELETE' && (name === 'agentId' || (name === 'id' && route.template.startsWith('/admin/agents/')))) return known.agentId;
    // PUT /admin/policies/{name} takes a body naming the same policy.
    return typeof body?.[name] === 'string' ? encodeURIComponent(body[name]) : 'hostile-probe';
  };
  const fill = (values: Record<string, string> = {}) => route.template.replace(/\{([^}]+)\}/g, (_all, name: string) => values[name] ?? plausibleParam(name));
  const base = fill();
  const probes: Probe[] = [];
  const add = (name: string, pathAndQuery: string, headers: Record<string, string> = {}, body?: string | Buffer) => probes.push({ route, name, path: pathAndQuery, headers, body });
  const takesBody = route.method !== 'GET';
  const jsonType = { 'content-type': 'application/json' };

  add('no body', base);
  if (takesBody) {
    add('empty object', base, jsonType, '{}');
    add('bad Content-Encoding gzip (not gzipped)', base, { ...jsonType, 'content-encoding': 'gzip' }, '{"a":1}');
    add('unknown Content-Encoding', base, { ...jsonType, 'content-encoding': 'x-unknown' }, '{}');
  }
  for (const name of new Set([...params, ...templateParams]).values()) add(`garbage ${name}`, fill({ [name]: GARBAGE_SEGMENTS[0] }));
  if (!full) return probes;

  for (const name of new Set([...params, ...templateParams]).values()) for (const segment of GARBAGE_SEGMENTS.slice(1)) add(`garbage ${name} ${segment.slice(0, 20)}`, fill({ [name]: segment }));
  for (const parameter of (route.operation.parameters ?? []).filter((candidate) => candidate.in === 'query')) {
    for (const query of GARBAGE_QUERIES(parameter.name)) add(`query ${query.slice(0, 40)}`, `${base}?${query}`);
  }
  for (const parameter of (route.operation.parameters ?? []).filter((candidate) => candidate.in === 'header')) {
    for (const value of ['', 'x'.repeat(8000), '\u00ff\u00fe', '-1', '1e400']) add(`header ${parameter.name} ${value.slice(0, 10)}`, base, { [parameter.name.toLowerCase()]: value });
  }
  add('query nested 40 deep', `${base}?${'a'.repeat(1)}${'[x]'.repeat(40)}=1`);
  add('query with 2000 parameters', `${base}?${Array.from({ length: 2000 }, (_value, index) => `p${index}=1`).join('&')}`);
  if (!takesBody) return probes;

  const text = JSON.stringify(body);
  add('plausible body', base, jsonType, text);
  for (const [name, sent] of [['JSON null', 'null'], ['JSON array', '[]'], ['JSON string', '"text"'], ['JSON number', '42'], ['broken JSON', '{"a":'], ['duplicate keys', '{"a":1,"a":2}'], ['__proto__', '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}'], ['BOM', `\ufeff${text}`], ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0xff, 0x22, 0x7d])], ['deep nesting', `${'['.repeat(5000)}${']'.repeat(5000)}`]] as Array<[string, string | Buffer]>) {
    add(name, base, jsonType, sent);
  }
  for (const [name, type] of [['text/plain', 'text/plain'], ['form', 'application/x-www-form-urlencoded'], ['multipart', 'multipart/form-data; boundary=x'], ['json utf-16', 'application/json; charset=utf-16'], ['json latin1', 'application/json; charset=latin1'], ['json unknown charset', 'application/json; charset=x-unknown'], ['yaml', 'application/yaml'], ['garbage type', ';;;/'], ['vendor json', 'application/vnd.x+json']]) {
    add(`Content-Type ${name}`, base, { 'content-type': type }, text);
  }
  add('form body', base, { 'content-type': 'application/x-www-form-urlencoded' }, 'expires=abc&token=%ED%A0%80&comment[a]=1&a=1&a=2');
  add('yaml garbage', base, { 'content-type': 'application/yaml' }, '{{{: - ] !!js/function >\n\t- *alias');
  add('yaml scalar', base, { 'content-type': 'application/yaml' }, 'just a string');
  add('yaml surrogate', base, { 'content-type': 'application/yaml' }, 'name: "\\ud800"\n');
  for (const encoding of ['gzip', 'deflate', 'br', 'gzip, gzip', 'identity', 'compress']) add(`Content-Encoding ${encoding} (not so encoded)`, base, { ...jsonType, 'content-encoding': encoding }, text);
  add('Content-Encoding gzip of garbage', base, { ...jsonType, 'content-encoding': 'gzip' }, GZIP_GARBAGE);
  add('Content-Encoding gzip bomb-ish', base, { ...jsonType, 'content-encoding': 'gzip' }, GZIP_BOMB);

  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  for (const [field, property] of Object.entries(properties)) {
    const resolved = resolve(property, route.document);
    for (const [name, value] of wrongValues(resolved)) add(`${field}: ${name}`, base, jsonType, JSON.stringify({ ...(body as object), [field]: value }));
    add(`${field} left out`, base, jsonType, JSON.stringify({ ...(body as object), [field]: undefined }));
    const nested = (resolve(resolved.type === 'array' ? (resolved.items as Schema) : resolved, route.document).properties ?? {}) as Record<string, Schema>;
    for (const [inner, innerSchema] of Object.entries(nested)) {
      for (const [name, value] of wrongValues(resolve(innerSchema, route.document)).filter(([name]) => ['null', '12345', '"text"', '{}', 'lone surrogate 0'].includes(name))) {
        const outer = plausible(resolved, route.document);
        const mutated = Array.isArray(outer) ? [{ ...(outer[0] as object), [inner]: value }] : { ...(outer as object), [inner]: value };
        add(`${field}.${inner}: ${name}`, base, jsonType, JSON.stringify({ ...(body as object), [field]: mutated }));
      }
    }
  }
  return probes;
}

async function send(probes: Probe[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  let next = 0;
  const worker = async () => {
    while (next < probes.length) {
      const probe = probes[next++];
      const { route } = probe;
      const outcome = await fetch(`${route.url}${probe.path}`, { method: route.method, headers: probe.headers, body: probe.body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), redirect: 'manual' })
        .then(async (response) => ({ status: response.status, body: await response.text() }))
        .catch((error: unknown) => ({ status: `no answer (${(error as Error).message})`, body: '' }));
      if (typeof outcome.status === 'number' && outcome.status < 500) continue;
      failures.push({ service: route.service, method: route.method, path: probe.path.slice(0, 120), case: probe.name, status: outcome.status, body: outcome.body.slice(0, 300) });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return failures;
}
