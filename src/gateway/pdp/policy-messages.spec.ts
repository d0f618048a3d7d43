import * as protoLoader from '@grpc/proto-loader';
import { Writer } from 'protobufjs8';
import { struct } from '../../../test/support/pdp-client';
import { PDP_PROTO_PATH } from './pdp-grpc-options';
import type { PdpAnswer } from '../../core/pdp/pdp.service';
import { MAX_STRUCT_DEPTH, PolicyMessages } from './policy-messages';

// proto-loader's own codec: the bytes any gRPC client sends, and what an SDK reads back.
const definition = protoLoader.loadSync(PDP_PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const method = (definition['agentgov.pdp.v1.PolicyDecisionPoint'] as protoLoader.ServiceDefinition).Evaluate;
const encodeRequest = (request: object): Buffer => method.requestSerialize(request);
const decodeResponse = (bytes: Buffer): unknown => method.responseDeserialize(bytes);

const messages = new PolicyMessages(PDP_PROTO_PATH);
const EMPTY = { agentId: '', action: '', resource: '', plugin: '', function: '', args: {}, context: {}, trustTier: '', traceId: '', approvalId: '', sessionId: '' };

describe('PolicyMessages.decode', () => {
  it('reads every field, the Structs as plain JSON objects', () => {
    const args = { path: '/etc/passwd', size: 12.5, negative: -3, recursive: true, owner: null, tags: ['a', 2, false, null, { deep: ['x'] }, []], nested: { empty: {}, text: 'héllo ✓ 🚀' } };
    const context = { data_class: 'pii', count: 0 };
    const request = { agentId: 'agent_1', action: 'FilePlugin.Read', resource: 'file:/etc', plugin: 'FilePlugin', function: 'Read', args: struct(args), context: struct(context), trustTier: 'trusted', traceId: 'trace-1', approvalId: 'appr_1', sessionId: 'sess_1' };
    expect(messages.decode(encodeRequest(request))).toEqual({ ...request, args, context });
  });

  it('gives proto3 defaults for an empty message', () => {
    expect(messages.decode(Buffer.alloc(0))).toEqual(EMPTY);
  });

  it('skips unknown fields of every wire type, at the top and inside Structs', () => {
    const writer = Writer.create();
    writer.uint32((20 << 3) | 0).uint64(2 ** 40);
    writer.uint32((21 << 3) | 1).double(1.5);
    writer.uint32((22 << 3) | 2).string('ignored');
    writer.uint32((23 << 3) | 5).float(2.5);
    writer.uint32((1 << 3) | 2).string('agent_1');
    // args = Struct { unknown field 9 (varint), fields: { a: 1 } }
    const entry = Writer.create().uint32((1 << 3) | 2).string('a').uint32((2 << 3) | 2).fork().uint32((2 << 3) | 1).double(1).uint32((9 << 3) | 0).uint32(7).ldelim().finish();
    const args = Writer.create().uint32((9 << 3) | 0).uint32(5).uint32((1 << 3) | 2).bytes(entry).finish();
    writer.uint32((6 << 3) | 2).bytes(args);
    expect(messages.decode(Buffer.from(writer.finish()))).toEqual({ ...EMPTY, agentId: 'agent_1', args: { a: 1 } });
  });

  it('keeps the last of repeated fields, map keys and Value kinds, and reads a Value with no kind as null', () => {
    const entry = (key: string, value: Uint8Array) => Writer.create().uint32((1 << 3) | 2).string(key).uint32((2 << 3) | 2).bytes(value).finish();
    const number = (n: number) => Writer.create().uint32((2 << 3) | 1).double(n).finish();
    const numberThenText = Writer.create().uint32((2 << 3) | 1).double(5).uint32((3 << 3) | 2).string('five').finish();
    const args = Writer.create();
    for (const bytes of [entry('k', number(1)), entry('k', number(2)), entry('none', new Uint8Array(0)), entry('both', numberThenText)]) args.uint32((1 << 3) | 2).bytes(bytes);
    const bytes = Buffer.concat([encodeRequest({ agentId: 'first' }), encodeRequest({ agentId: 'second' }), Buffer.from(Writer.create().uint32((6 << 3) | 2).bytes(args.finish()).finish())]);
    expect(messages.decode(bytes)).toEqual({ ...EMPTY, agentId: 'second', args: { k: 2, none: null, both: 'five' } });
  });

  it('makes a __proto__ key an own property, never the object’s prototype', () => {
    const decoded = messages.decode(encodeRequest({ agentId: 'a', args: struct({ ['__proto__']: { polluted: true } }) }));
    expect(Object.getPrototypeOf(decoded.args)).toBe(Object.prototype);
    expect(Object.keys(decoded.args)).toEqual(['__proto__']);
    expect((decoded.args as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a truncated string', Buffer.from([0x0a, 5, 0x61])],
    ['a truncated varint', Buffer.from([0x0a, 0x80])],
    ['a group (wire type 3) never ended', Buffer.from([(12 << 3) | 3])],
    ['a number cut short', Buffer.from([0x32, 6, 0x0a, 4, 0x12, 2, 0x11, 0])],
    ['a string that is not UTF-8', Buffer.from([0x0a, 2, 0xc3, 0x28])],
  ])('reports %s as a problem, never throwing', (_label, bytes) => {
    expect(messages.decode(bytes).problem).toMatch(/^malformed PolicyRequest: ./);
  });

  it('refuses NaN and the infinities, which a Struct cannot carry in JSON, and keeps -0 and the largest doubles', () => {
    for (const n of [NaN, Infinity, -Infinity]) expect(messages.decode(encodeRequest({ agentId: 'a', args: struct({ n }) })).problem).toContain('not a finite number');
    expect(messages.decode(encodeRequest({ agentId: 'a', context: struct({ n: [1, 2, NaN] }) })).problem).toContain('not a finite number');
    expect(messages.decode(encodeRequest({ agentId: 'a', args: struct({ max: Number.MAX_VALUE, zero: -0 }) })).args).toEqual({ max: Number.MAX_VALUE, zero: -0 });
  });

  it(`refuses Structs and lists nested deeper than ${MAX_STRUCT_DEPTH} levels`, () => {
    const nest = (depth: number): Record<string, unknown> => (depth === 0 ? { leaf: 1 } : { next: nest(depth - 1) });
    const nestLists = (depth: number): unknown => (depth === 0 ? 1 : [nestLists(depth - 1)]);
    expect(messages.decode(encodeRequest({ agentId: 'a', args: struct(nest(MAX_STRUCT_DEPTH - 2)) })).problem).toBeUndefined();
    expect(messages.decode(encodeRequest({ agentId: 'a', args: struct(nest(MAX_STRUCT_DEPTH + 5)) })).problem).toContain(`nested deeper than ${MAX_STRUCT_DEPTH} levels`);
    expect(messages.decode(encodeRequest({ agentId: 'a', args: struct({ list: nestLists(MAX_STRUCT_DEPTH + 5) }) })).problem).toContain(`nested deeper than ${MAX_STRUCT_DEPTH} levels`);
  });
});

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
  approvalId: '',
  approvalExpiresAt: '',
};

describe('PolicyMessages.encode', () => {
  it.each<[string, PdpAnswer]>([
    ['an allow with every field set', ALLOW],
    ['a denial with UTF-8 texts and a large version', { ...ALLOW, decision: 'DECISION_DENY', reason: 'Zugriff verweigert ✋ — 🚫', rule: 'règle-1', policyVersion: 2 ** 53 - 1, cacheable: false }],
    ['an answer at every proto3 default', { ...ALLOW, reason: '', policy: '', traceId: '', latencyMs: 0, decisionId: '', policyVersion: 0, cacheable: false, cacheTtlMs: 0, enforced: false }],
    ['a long reason (a two-byte length)', { ...ALLOW, reason: 'x'.repeat(300) }],
    ['a negative int64', { ...ALLOW, cacheTtlMs: -5 }],
  ])('is read back by proto-loader as the answer: %s', (_label, answer) => {
    const bytes = messages.encode(answer);
    expect(Buffer.isBuffer(bytes)).toBe(true);
    expect(decodeResponse(bytes)).toEqual(answer);
  });

  it('leaves out the fields at their proto3 default', () => {
    expect(messages.encode({ ...ALLOW, decision: 'DECISION_ALLOW', reason: '', policy: '', traceId: '', latencyMs: 0, decisionId: '', policyVersion: 0, cacheable: false, cacheTtlMs: 0, enforced: false })).toEqual(Buffer.from([0x08, 1]));
  });
});
