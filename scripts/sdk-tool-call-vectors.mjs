#!/usr/bin/env node
// Writes sdk/fixtures/decision-token-tool-calls.json: MCP tool calls with the decision tokens the
// gateway's own code signs for them, so the SDKs' verifiers (Python, .NET) are checked against the
// TypeScript implementation rather than against themselves. Run after `npm run build`:
//   node scripts/sdk-tool-call-vectors.mjs
// A tool call's token binds requestHash('TOOLS/CALL', <tool name>, <RFC 8785 (JCS) bytes of
// params.arguments, {} when absent>) (docs/security.md "Decision tokens"). The key is a fixed test
// key and the clock a fixed time, so the file is the same at every run.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calculateJwkThumbprint } from 'jose';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { canonicalJson } = await import(join(root, 'dist/src/core/common/canonical-json.js'));
const { DecisionTokenSigner, requestHash } = await import(join(root, 'dist/src/core/decision/decision-token.js'));

// The params of each call as the JSON text an MCP server receives (numbers as written: a parser
// must read 1e21, -0 and 1.0 itself); `_meta` is added by the tests from `token`.
const calls = [
  ['no arguments', '{"name":"list_orders"}'],
  ['empty arguments', '{"name":"list_orders","arguments":{}}'],
  ['keys sorted by UTF-16 code units (RFC 8785 3.2.3)', '{"name":"lookup","arguments":{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}}'],
  ['unicode and escapes in strings', '{"name":"translate","arguments":{"text":"Grüße, 世界 😀","controls":"\\u0000\\u001f\\"\\\\\\b\\f\\n\\r\\t/\\u007f\\u2028","escaped":"\\u00e9\\u4e16"}}'],
  ['nested objects and arrays', '{"name":"create_order","arguments":{"order":{"lines":[{"sku":"B-2","qty":3},{"sku":"A-1","qty":1,"note":null}],"rush":false,"customer":{"name":"Ada","tags":[]}},"dry_run":true}}'],
  ['numbers as ECMAScript writes them', '{"name":"measure","arguments":{"big":1e21,"just_under":1e20,"tenth":0.1,"negative_zero":-0,"negative_zero_float":-0.0,"one":1.0,"small":1E-7,"micro":0.000001,"huge_integer":123456789012345678901234567890,"past_2_53":9007199254740993,"min":5e-324,"max":1.7976931348623157e308,"third":333333333.33333329,"half":-1.50,"milli":2e-3,"exponent":12e3}}'],
  ['keys out of order, the name after the arguments', '{"arguments":{"sku":"A-1","qty":1},"name":"create_order"}'],
];

const seed = Buffer.alloc(32, 7);
const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
const publicJwk = createPublicKey(privateKey).export({ format: 'jwk' });
const kid = await calculateJwkThumbprint(publicJwk);
const issuer = 'http://gateway.vectors.test';
const nowMs = Date.UTC(2026, 11, 1, 12, 0, 0);

const realNow = Date.now;
Date.now = () => nowMs;
const signer = new DecisionTokenSigner(() => ({ privateKey, kid, alg: 'EdDSA' }), () => issuer);
const cases = await Promise.all(
  calls.map(([about, text], index) => {
    const params = JSON.parse(text);
    const canonicalArguments = canonicalJson(params.arguments ?? {});
    const req = requestHash('TOOLS/CALL', params.name, Buffer.from(canonicalArguments));
    const fields = { jti: `aud_vector${index}`, sub: 'agt_vectors', org: 'org_vectors', act: `mcp:${params.name}`, req };
    return new Promise((resolve) => signer.issue(DecisionTokenSigner.claims(fields, nowMs), (token) => resolve({ about, params: text, canonicalArguments, req, decisionId: fields.jti, action: fields.act, token })));
  }),
);
Date.now = realNow;

// Doubles from a fixed sequence of bit patterns (xorshift64), each written with 21 significant
// digits (the same double read back) and as ECMAScript writes it: the number text of RFC 8785.
const numbers = [];
let state = 0x9e3779b97f4a7c15n;
const bits = new DataView(new ArrayBuffer(8));
while (numbers.length < 500) {
  state ^= (state << 13n) & 0xffffffffffffffffn;
  state ^= state >> 7n;
  state ^= (state << 17n) & 0xffffffffffffffffn;
  bits.setBigUint64(0, state);
  // Every fourth a double of a small exponent, where plain and exponent forms meet.
  if (numbers.length % 4 === 0) bits.setUint16(0, (bits.getUint16(0) & 0x800f) | ((0x3e0 + (numbers.length % 0x70)) << 4));
  const value = bits.getFloat64(0);
  if (Number.isFinite(value)) numbers.push([value.toExponential(20), JSON.stringify(value)]);
}

const fixture = {
  rule: "An MCP tool call's decision token is in params._meta['io.agentgov/decision-token']; its req claim is requestHash('TOOLS/CALL', params.name, UTF-8 bytes of the RFC 8785 (JCS) canonical JSON of params.arguments, {} when absent): base64url(SHA-256('TOOLS/CALL' + '\\n' + name + '\\n' + bytes)). Each SDK's verifier accepts each case's params with its token at `now` (seconds), canonicalises `params`' arguments to exactly `canonicalArguments`, and refuses a token with another case's params (wrong_request); each of `numbers` is [JSON number text, its RFC 8785 text]. Written by scripts/sdk-tool-call-vectors.mjs from the gateway's own code; do not edit by hand.",
  metaKey: 'io.agentgov/decision-token',
  issuer,
  now: nowMs / 1000,
  jwks: { keys: [{ ...publicJwk, kid, alg: 'EdDSA', use: 'sig' }] },
  cases,
  numbers,
};
writeFileSync(join(root, 'sdk/fixtures/decision-token-tool-calls.json'), `${JSON.stringify(fixture, null, 2)}\n`);
