/**
 * google.protobuf.Struct as @grpc/proto-loader decodes it (`{fields: {name: Value}}`), to and
 * from plain JSON objects, which is what policies read and proto3 JSON carries.
 */
export interface ProtoStruct {
  fields?: Record<string, ProtoValue>;
}

export interface ProtoValue {
  nullValue?: unknown;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: ProtoStruct;
  listValue?: { values?: ProtoValue[] };
  kind?: string;
}

/** A Struct's plain JSON object; an absent Struct is an empty object. */
export function structToObject(struct: ProtoStruct | null | undefined): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(struct?.fields ?? {})) result[key] = valueToJson(value);
  return result;
}

function valueToJson(value: ProtoValue): unknown {
  switch (value.kind) {
    case 'numberValue':
      return value.numberValue;
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'structValue':
      return structToObject(value.structValue);
    case 'listValue':
      return (value.listValue?.values ?? []).map(valueToJson);
    default:
      return null;
  }
}

/** The Struct of a plain JSON object. */
export function objectToStruct(object: Readonly<Record<string, unknown>>): ProtoStruct {
  const fields: Record<string, ProtoValue> = {};
  for (const [key, value] of Object.entries(object)) fields[key] = jsonToValue(value);
  return { fields };
}

function jsonToValue(value: unknown): ProtoValue {
  if (value === null || value === undefined) return { nullValue: 0, kind: 'nullValue' };
  if (typeof value === 'number') return { numberValue: value, kind: 'numberValue' };
  if (typeof value === 'string') return { stringValue: value, kind: 'stringValue' };
  if (typeof value === 'boolean') return { boolValue: value, kind: 'boolValue' };
  if (Array.isArray(value)) return { listValue: { values: value.map(jsonToValue) }, kind: 'listValue' };
  return { structValue: objectToStruct(value as Record<string, unknown>), kind: 'structValue' };
}
