import type { PdpRequest } from './pdp-request';

/**
 * `agentgov.pdp.v1.PolicyRequest` read straight off the wire, its two google.protobuf.Struct
 * fields (`args`, `context`) as the plain JSON objects policies read. @grpc/proto-loader builds a
 * message object per Struct, map entry and Value, copies them all with `toObject`, and the
 * controller then copied them once more into plain objects: about a sixth of the gateway's CPU
 * per streamed decision. This decoder makes one pass and no intermediate object.
 *
 * It never throws: a malformed message comes back with `problem` set, which the controller
 * answers INVALID_ARGUMENT (a throwing deserializer makes grpc-js answer INTERNAL).
 */

/** A decoded PolicyRequest: proto3 defaults (`''`, `{}`) for absent fields. */
export interface DecodedPolicyRequest extends PdpRequest {
  /** Why the bytes are not a PolicyRequest; the other fields are then meaningless. */
  problem?: string;
}

/** Deepest nesting of Structs and lists accepted in `args` or `context` (protobuf's own limit of 100 messages allows about 49). */
export const MAX_STRUCT_DEPTH = 32;

/** Protobuf wire types. */
export const WIRE = { Varint: 0, Fixed64: 1, Bytes: 2, Fixed32: 5 } as const;

/** PolicyRequest's string fields by number (proto/pdp.proto). */
const STRING_FIELDS: Record<number, 'agentId' | 'action' | 'resource' | 'plugin' | 'function' | 'trustTier' | 'traceId'> = { 1: 'agentId', 2: 'action', 3: 'resource', 4: 'plugin', 5: 'function', 8: 'trustTier', 9: 'traceId' };

class WireError extends Error {}

/** Decodes a PolicyRequest; see DecodedPolicyRequest.problem for malformed input. */
export function decodePolicyRequest(bytes: Buffer): DecodedPolicyRequest {
  const request: DecodedPolicyRequest = { agentId: '', action: '', resource: '', plugin: '', function: '', args: {}, context: {}, trustTier: '', traceId: '' };
  try {
    new WireReader(bytes).readRequest(request);
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    request.problem = `malformed PolicyRequest: ${error.message}`;
  }
  return request;
}

class WireReader {
  private at = 0;

  constructor(private readonly bytes: Buffer) {}

  readRequest(request: DecodedPolicyRequest): void {
    const end = this.bytes.length;
    while (this.at < end) {
      const tag = this.varint();
      const field = tag >>> 3;
      const name = STRING_FIELDS[field];
      if (name !== undefined) request[name] = this.string(tag, field);
      else if (field === 6) request.args = this.struct(this.length(tag, field), 0);
      else if (field === 7) request.context = this.struct(this.length(tag, field), 0);
      else this.skip(tag);
    }
  }

  /** A Struct's fields (map<string, Value> = 1) up to `end`; repeated keys: the last wins, as protobuf maps do. */
  private struct(end: number, depth: number): Record<string, unknown> {
    if (depth >= MAX_STRUCT_DEPTH) throw new WireError(`Structs nested deeper than ${MAX_STRUCT_DEPTH} levels`);
    const result: Record<string, unknown> = {};
    while (this.at < end) {
      const tag = this.varint();
      if (tag >>> 3 !== 1) {
        this.skip(tag);
        continue;
      }
      const entryEnd = this.length(tag, 1);
      let key = '';
      let value: unknown = null;
      while (this.at < entryEnd) {
        const entryTag = this.varint();
        if (entryTag >>> 3 === 1) key = this.string(entryTag, 1);
        else if (entryTag >>> 3 === 2) value = this.value(this.length(entryTag, 2), depth);
        else this.skip(entryTag);
      }
      this.ended(entryEnd);
      // A plain assignment of `__proto__` would replace the object's prototype instead of adding a key.
      if (key === '__proto__') Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
      else result[key] = value;
    }
    this.ended(end);
    return result;
  }

  /** A google.protobuf.Value up to `end`: the last member of its `kind` oneof, null when none is set. */
  private value(end: number, depth: number): unknown {
    let value: unknown = null;
    while (this.at < end) {
      const tag = this.varint();
      switch (tag >>> 3) {
        case 1:
          this.expect(tag, WIRE.Varint, 1);
          this.varint();
          value = null;
          break;
        case 2:
          this.expect(tag, WIRE.Fixed64, 2);
          value = this.finiteDouble();
          break;
        case 3:
          value = this.string(tag, 3);
          break;
        case 4:
          this.expect(tag, WIRE.Varint, 4);
          value = this.varint() !== 0;
          break;
        case 5:
          value = this.struct(this.length(tag, 5), depth + 1);
          break;
        case 6:
          value = this.list(this.length(tag, 6), depth + 1);
          break;
        default:
          this.skip(tag);
      }
    }
    this.ended(end);
    return value;
  }

  /** A ListValue's values (repeated Value = 1) up to `end`. */
  private list(end: number, depth: number): unknown[] {
    if (depth >= MAX_STRUCT_DEPTH) throw new WireError(`lists nested deeper than ${MAX_STRUCT_DEPTH} levels`);
    const values: unknown[] = [];
    while (this.at < end) {
      const tag = this.varint();
      if (tag >>> 3 === 1) values.push(this.value(this.length(tag, 1), depth));
      else this.skip(tag);
    }
    this.ended(end);
    return values;
  }

  private string(tag: number, field: number): string {
    const end = this.length(tag, field);
    const text = this.bytes.toString('utf8', this.at, end);
    this.at = end;
    return text;
  }

  /** The end of a length-delimited field that starts here. */
  private length(tag: number, field: number): number {
    this.expect(tag, WIRE.Bytes, field);
    const length = this.varint();
    const end = this.at + length;
    if (end > this.bytes.length) throw new WireError(`field ${field} runs past the end of the message`);
    return end;
  }

  /**
   * A Value's number_value. NaN and the infinities are refused: a Struct cannot carry them in its
   * JSON form (protobuf's Value says so), the audit trail would record them as null, and a policy
   * would compare them as no JSON number compares (`args.amount > 1000` is false for NaN).
   */
  private finiteDouble(): number {
    const value = this.double();
    if (!Number.isFinite(value)) throw new WireError(`a number in args or context is not a finite number (${value})`);
    return value;
  }

  private double(): number {
    if (this.at + 8 > this.bytes.length) throw new WireError('a number runs past the end of the message');
    const value = this.bytes.readDoubleLE(this.at);
    this.at += 8;
    return value;
  }

  /** A varint as a number: exact up to 2^53, which covers every tag, length and enum; larger ones only matter as non-zero. */
  private varint(): number {
    let value = 0;
    let scale = 1;
    for (let read = 0; read < 10; read++) {
      if (this.at >= this.bytes.length) throw new WireError('a varint runs past the end of the message');
      const byte = this.bytes[this.at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new WireError('a varint is longer than 10 bytes');
  }

  /** Skips a field this decoder does not read (an unknown field, as protobuf requires). */
  private skip(tag: number): void {
    switch (tag & 7) {
      case WIRE.Varint:
        this.varint();
        return;
      case WIRE.Fixed64:
        this.advance(8);
        return;
      case WIRE.Bytes:
        this.advance(this.varint());
        return;
      case WIRE.Fixed32:
        this.advance(4);
        return;
      default:
        throw new WireError(`field ${tag >>> 3} has wire type ${tag & 7}, which proto3 does not use`);
    }
  }

  private advance(count: number): void {
    if (this.at + count > this.bytes.length) throw new WireError('a field runs past the end of the message');
    this.at += count;
  }

  private expect(tag: number, wireType: number, field: number): void {
    if ((tag & 7) !== wireType) throw new WireError(`field ${field} has wire type ${tag & 7}, not ${wireType}`);
  }

  /** An embedded message must end exactly where its length said. */
  private ended(end: number): void {
    if (this.at !== end) throw new WireError('an embedded message runs past its length');
  }
}
