import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { struct } from '../../test/support/pdp-client';
import { PDP_PROTO_PATH } from './pdp-grpc-options';
import { decodePolicyRequest, MAX_STRUCT_DEPTH } from './policy-request-decoder';

// proto-loader's own serializer: the bytes any gRPC client sends.
const definition = protoLoader.loadSync(PDP_PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const method = (definition['agentgov.pdp.v1.PolicyDecisionPoint'] as protoLoader.ServiceDefinition).Evaluate;
const encode = (request: object): Buffer => method.requestSerialize(request);

const EMPTY = { agentId: '', action: '', resource: '', plugin: '', function: '', args: {}, context: {}, trustTier: '', traceId: '' };

describe('decodePolicyRequest', () => {
  it('reads every field, the Structs as plain JSON objects', () => {
    const args = { path: '/etc/passwd', size: 12.5, negative: -3, recursive: true, owner: null, tags: ['a', 2, false, null, { deep: ['x'] }, []], nested: { empty: {}, text: 'héllo ✓ 🚀' } };
    const context = { data_class: 'pii', count: 0 };
    const request = { agentId: 'agent_1', action: 'FilePlugin.Read', resource: 'file:/etc', plugin: 'FilePlugin', function: 'Read', args: struct(args), context: struct(context), trustTier: 'trusted', traceId: 'trace-1' };
    expect(decodePolicyRequest(encode(request))).toEqual({ ...request, args, context });
  });

  it('gives proto3 defaults for an empty message', () => {
    expect(decodePolicyRequest(Buffer.alloc(0))).toEqual(EMPTY);
  });

  it('skips unknown fields of every wire type, at the top and inside Structs', () => {
    const writer = protobuf.Writer.create();
    writer.uint32((20 << 3) | 0).uint64(2 ** 40);
    writer.uint32((21 << 3) | 1).double(1.5);
    writer.uint32((22 << 3) | 2).string('ignored');
    writer.uint32((23 << 3) | 5).float(2.5);
    writer.uint32((1 << 3) | 2).string('agent_1');
    // args = Struct { unknown field 9 (varint), fields: { a: 1 } }
    const entry = protobuf.Writer.create().uint32((1 << 3) | 2).string('a').uint32((2 << 3) | 2).fork().uint32((2 << 3) | 1).double(1).uint32((9 << 3) | 0).uint32(7).ldelim().finish();
    const args = protobuf.Writer.create().uint32((9 << 3) | 0).uint32(5).uint32((1 << 3) | 2).bytes(entry).finish();
    writer.uint32((6 << 3) | 2).bytes(args);
    expect(decodePolicyRequest(Buffer.from(writer.finish()))).toEqual({ ...EMPTY, agentId: 'agent_1', args: { a: 1 } });
  });

  it('keeps the last of repeated fields and map keys, and reads a Value with no kind as null', () => {
    const entry = (key: string, value: Uint8Array) => protobuf.Writer.create().uint32((1 << 3) | 2).string(key).uint32((2 << 3) | 2).bytes(value).finish();
    const number = (n: number) => protobuf.Writer.create().uint32((2 << 3) | 1).double(n).finish();
    const args = protobuf.Writer.create();
    for (const bytes of [entry('k', number(1)), entry('k', number(2)), entry('none', new Uint8Array(0))]) args.uint32((1 << 3) | 2).bytes(bytes);
    const bytes = Buffer.concat([encode({ agentId: 'first' }), encode({ agentId: 'second' }), Buffer.from(protobuf.Writer.create().uint32((6 << 3) | 2).bytes(args.finish()).finish())]);
    expect(decodePolicyRequest(bytes)).toEqual({ ...EMPTY, agentId: 'second', args: { k: 2, none: null } });
  });

  it('makes a __proto__ key an own property, never the object’s prototype', () => {
    const decoded = decodePolicyRequest(encode({ agentId: 'a', args: struct({ ['__proto__']: { polluted: true } }) }));
    expect(Object.getPrototypeOf(decoded.args)).toBe(Object.prototype);
    expect(Object.keys(decoded.args)).toEqual(['__proto__']);
    expect((decoded.args as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a truncated string', Buffer.from([0x0a, 5, 0x61]), 'field 1 runs past the end of the message'],
    ['a truncated varint', Buffer.from([0x0a, 0x80]), 'a varint runs past the end of the message'],
    ['a string field sent as a varint', Buffer.from([0x08, 1]), 'field 1 has wire type 0, not 2'],
    ['a group (wire type 3)', Buffer.from([(12 << 3) | 3]), 'field 12 has wire type 3'],
    ['a number cut short', Buffer.from([0x32, 6, 0x0a, 4, 0x12, 2, 0x11, 0]), 'runs past'],
  ])('reports %s as a problem, never throwing', (_label, bytes, problem) => {
    expect(decodePolicyRequest(bytes).problem).toContain(problem);
  });

  it('refuses NaN and the infinities, which a Struct cannot carry in JSON, and keeps -0 and the largest doubles', () => {
    for (const n of [NaN, Infinity, -Infinity]) expect(decodePolicyRequest(encode({ agentId: 'a', args: struct({ n }) })).problem).toContain('not a finite number');
    expect(decodePolicyRequest(encode({ agentId: 'a', context: struct({ n: [1, 2, NaN] }) })).problem).toContain('not a finite number');
    expect(decodePolicyRequest(encode({ agentId: 'a', args: struct({ max: Number.MAX_VALUE, zero: -0 }) })).args).toEqual({ max: Number.MAX_VALUE, zero: -0 });
  });

  it(`refuses Structs nested deeper than ${MAX_STRUCT_DEPTH} levels`, () => {
    const nest = (depth: number): Record<string, unknown> => (depth === 0 ? { leaf: 1 } : { next: nest(depth - 1) });
    expect(decodePolicyRequest(encode({ agentId: 'a', args: struct(nest(MAX_STRUCT_DEPTH - 2)) })).problem).toBeUndefined();
    expect(decodePolicyRequest(encode({ agentId: 'a', args: struct(nest(MAX_STRUCT_DEPTH + 5)) })).problem).toContain(`nested deeper than ${MAX_STRUCT_DEPTH} levels`);
  });
});
