import { loadSync, Type } from 'protobufjs8';
import type { PdpRequest } from '../../core/pdp/pdp-request';
import type { PdpAnswer } from '../../core/pdp/pdp.service';

/** A decoded PolicyRequest: proto3 defaults (`''`, `{}`) for absent fields. */
export interface DecodedPolicyRequest extends PdpRequest {
  /** Why the bytes are not a PolicyRequest; the other fields are then meaningless. */
  problem?: string;
}

/** Deepest nesting of Structs and lists accepted in `args` or `context` (protobuf's own limit of 100 messages allows about 49). */
export const MAX_STRUCT_DEPTH = 32;

/** google.protobuf.Struct, Value and ListValue as protobufjs decodes them (`kind`: the member of the oneof last set). */
interface StructMessage {
  fields: Record<string, ValueMessage>;
}
interface ValueMessage {
  kind?: 'nullValue' | 'numberValue' | 'stringValue' | 'boolValue' | 'structValue' | 'listValue';
  numberValue: number;
  stringValue: string;
  boolValue: boolean;
  structValue: StructMessage | null;
  listValue: { values: ValueMessage[] } | null;
}
type PolicyRequestMessage = Omit<PdpRequest, 'args' | 'context'> & { args: StructMessage | null; context: StructMessage | null };

const DECISION_NUMBERS: Record<PdpAnswer['decision'], number> = { DECISION_ALLOW: 1, DECISION_DENY: 2, DECISION_PENDING: 3 };

/**
 * The wire codec of Evaluate and EvaluateStream: PolicyRequest and PolicyResponse as protobufjs
 * builds them from proto/pdp.proto (its reflection mode generates each message's encoder and
 * decoder when the proto is loaded; its static mode writes the same code to a file), with the
 * two google.protobuf.Struct fields (`args`, `context`) read as the plain JSON objects policies read.
 * It is protobufjs 8, installed as `protobufjs8` beside the protobufjs 7 that proto-loader brings:
 * 7 reads a string cut short by the end of the message as what is there, and takes a field of
 * the wrong wire type as its own; 8 refuses the first and skips the second as unknown.
 *
 * decode never throws: a malformed message comes back with `problem` set, which the controller
 * answers INVALID_ARGUMENT (a throwing deserializer makes grpc-js answer INTERNAL).
 */
export class PolicyMessages {
  private readonly request: Type;
  private readonly response: Type;

  constructor(protoPath: string) {
    const root = loadSync(protoPath);
    this.request = root.lookupType('agentgov.pdp.v1.PolicyRequest');
    this.response = root.lookupType('agentgov.pdp.v1.PolicyResponse');
  }

  decode(bytes: Buffer): DecodedPolicyRequest {
    try {
      const message = this.request.decode(bytes) as unknown as PolicyRequestMessage;
      const { agentId, action, resource, plugin, trustTier, traceId, approvalId, sessionId } = message;
      return { agentId, action, resource, plugin, function: message.function, args: plainStruct(message.args, 0), context: plainStruct(message.context, 0), trustTier, traceId, approvalId, sessionId };
    } catch (error) {
      return { ...EMPTY_REQUEST, problem: `malformed PolicyRequest: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  /** Fields at their proto3 default are left out, as proto3 encoders do. */
  encode(answer: PdpAnswer): Buffer {
    return this.response.encode({ ...answer, decision: DECISION_NUMBERS[answer.decision] }).finish() as Buffer;
  }
}

const EMPTY_REQUEST: DecodedPolicyRequest = { agentId: '', action: '', resource: '', plugin: '', function: '', args: {}, context: {}, trustTier: '', traceId: '', approvalId: '', sessionId: '' };

/** A Struct as a plain object; `{}` when absent. Repeated keys: the last wins, as protobuf maps do. */
function plainStruct(struct: StructMessage | null, depth: number): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  if (struct === null) return result;
  if (depth >= MAX_STRUCT_DEPTH) throw new Error(`Structs nested deeper than ${MAX_STRUCT_DEPTH} levels`);
  for (const key of Object.keys(struct.fields)) {
    const value = plainValue(struct.fields[key], depth);
    // A plain assignment of `__proto__` would replace the object's prototype instead of adding a key.
    if (key === '__proto__') Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
    else result[key] = value;
  }
  return result;
}

/**
 * A Value as JSON; null when no kind is set. NaN and the infinities are refused: a Struct
 * cannot carry them in its JSON form (protobuf's Value says so), the audit trail would record
 * them as null, and a policy would compare them as no JSON number compares (`args.amount > 1000`
 * is false for NaN).
 */
function plainValue(value: ValueMessage, depth: number): unknown {
  switch (value.kind) {
    case 'numberValue':
      if (!Number.isFinite(value.numberValue)) throw new Error(`a number in args or context is not a finite number (${value.numberValue})`);
      return value.numberValue;
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'structValue':
      return plainStruct(value.structValue, depth + 1);
    case 'listValue':
      if (depth + 1 >= MAX_STRUCT_DEPTH) throw new Error(`lists nested deeper than ${MAX_STRUCT_DEPTH} levels`);
      return (value.listValue?.values ?? []).map((item) => plainValue(item, depth + 1));
    default:
      return null;
  }
}
