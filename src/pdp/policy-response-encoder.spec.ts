import * as protoLoader from '@grpc/proto-loader';
import { PDP_PROTO_PATH } from './pdp-grpc-options';
import type { PdpAnswer } from './pdp.service';
import { encodePolicyResponse } from './policy-response-encoder';

// What an SDK does with the bytes: proto-loader's own deserializer.
const definition = protoLoader.loadSync(PDP_PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const method = (definition['agentgov.pdp.v1.PolicyDecisionPoint'] as protoLoader.ServiceDefinition).Evaluate;
const decode = (bytes: Buffer): unknown => method.responseDeserialize(bytes);
const serialize = (answer: PdpAnswer): Buffer => method.responseSerialize(answer);

const ALLOW: PdpAnswer = {
  decision: 'DECISION_ALLOW',
  reason: 'Allowed by default',
  policy: 'default',
  rule: '',
  policyVersion: 1_795_533_918_616,
  traceId: 'trace-1',
  latencyMs: 0.042,
  decisionId: 'aud_0123456789abcdef',
  cacheable: true,
  cacheTtlMs: 30_000,
  enforced: true,
};

describe('encodePolicyResponse', () => {
  it.each<[string, PdpAnswer]>([
    ['an allow with every field set', ALLOW],
    ['a denial with UTF-8 texts and a large version', { ...ALLOW, decision: 'DECISION_DENY', reason: 'Zugriff verweigert ✋ — 🚫', rule: 'règle-1', policyVersion: 2 ** 53 - 1, cacheable: false }],
    ['an answer at every proto3 default', { ...ALLOW, reason: '', policy: '', traceId: '', latencyMs: 0, decisionId: '', policyVersion: 0, cacheable: false, cacheTtlMs: 0, enforced: false }],
    ['a long reason (a two-byte length)', { ...ALLOW, reason: 'x'.repeat(300) }],
    ['a negative int64', { ...ALLOW, cacheTtlMs: -5 }],
  ])('is read back by proto-loader as the answer: %s', (_label, answer) => {
    expect(decode(encodePolicyResponse(answer))).toEqual(answer);
  });

  it('decodes to what proto-loader’s own serializer gives', () => {
    expect(decode(encodePolicyResponse(ALLOW))).toEqual(decode(serialize(ALLOW)));
  });
});
