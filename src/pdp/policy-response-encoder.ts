import type { PdpAnswer } from './pdp.service';
import { WIRE } from './policy-request-decoder';

/**
 * `agentgov.pdp.v1.PolicyResponse` written straight to the wire: the counterpart of
 * decodePolicyRequest. @grpc/proto-loader's serializer first copies the answer into a message
 * object (`fromObject`), then encodes it through a generic writer; every streamed decision pays
 * for both. Fields at their proto3 default are left out, as proto3 encoders do.
 */
export function encodePolicyResponse(answer: PdpAnswer): Buffer {
  const decision = DECISION_NUMBERS[answer.decision];
  const reason = Buffer.byteLength(answer.reason);
  const policy = Buffer.byteLength(answer.policy);
  const rule = Buffer.byteLength(answer.rule);
  const traceId = Buffer.byteLength(answer.traceId);
  const decisionId = Buffer.byteLength(answer.decisionId);
  const size =
    (decision === 0 ? 0 : 2) +
    stringSize(reason) +
    stringSize(policy) +
    stringSize(rule) +
    int64Size(answer.policyVersion) +
    stringSize(traceId) +
    (answer.latencyMs === 0 ? 0 : 9) +
    stringSize(decisionId) +
    (answer.cacheable ? 2 : 0) +
    int64Size(answer.cacheTtlMs) +
    (answer.enforced ? 2 : 0);
  const writer = new WireWriter(Buffer.allocUnsafe(size));
  if (decision !== 0) writer.tag(1, WIRE.Varint).varint(decision);
  writer.string(2, answer.reason, reason).string(3, answer.policy, policy).string(4, answer.rule, rule);
  writer.int64(5, answer.policyVersion);
  writer.string(6, answer.traceId, traceId);
  if (answer.latencyMs !== 0) writer.tag(7, WIRE.Fixed64).double(answer.latencyMs);
  writer.string(8, answer.decisionId, decisionId);
  if (answer.cacheable) writer.tag(9, WIRE.Varint).varint(1);
  writer.int64(10, answer.cacheTtlMs);
  if (answer.enforced) writer.tag(11, WIRE.Varint).varint(1);
  return writer.bytes;
}

const DECISION_NUMBERS: Record<PdpAnswer['decision'], number> = { DECISION_ALLOW: 1, DECISION_DENY: 2 };

/** Bytes of a string field (tag, length, UTF-8) of `length` bytes; 0 when empty. Tags of fields 1-15 take one byte. */
function stringSize(length: number): number {
  return length === 0 ? 0 : 1 + varintSize(length) + length;
}

/** Bytes of an int64 field; 0 when zero. A negative int64 takes ten bytes (two's complement). */
function int64Size(value: number): number {
  if (value === 0) return 0;
  return 1 + (value < 0 ? 10 : varintSize(value));
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

class WireWriter {
  private at = 0;

  constructor(readonly bytes: Buffer) {}

  tag(field: number, wireType: number): this {
    this.bytes[this.at++] = (field << 3) | wireType;
    return this;
  }

  /** A non-negative integer up to 2^53 as a varint. */
  varint(value: number): this {
    while (value >= 128) {
      this.bytes[this.at++] = (value % 128) | 0x80;
      value = Math.floor(value / 128);
    }
    this.bytes[this.at++] = value;
    return this;
  }

  string(field: number, text: string, length: number): this {
    if (length === 0) return this;
    this.tag(field, WIRE.Bytes).varint(length);
    this.at += this.bytes.write(text, this.at, length, 'utf8');
    return this;
  }

  int64(field: number, value: number): this {
    if (value === 0) return this;
    this.tag(field, WIRE.Varint);
    if (value >= 0) return this.varint(value);
    let bits = BigInt.asUintN(64, BigInt(value));
    for (let index = 0; index < 9; index++, bits >>= 7n) this.bytes[this.at++] = Number(bits & 0x7fn) | 0x80;
    this.bytes[this.at++] = Number(bits);
    return this;
  }

  double(value: number): this {
    this.at = this.bytes.writeDoubleLE(value, this.at);
    return this;
  }
}
