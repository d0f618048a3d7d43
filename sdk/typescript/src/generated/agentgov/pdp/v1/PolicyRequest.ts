// Original file: proto/pdp.proto

import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../../google/protobuf/Struct';

export interface PolicyRequest {
  'agentId'?: (string);
  'action'?: (string);
  'resource'?: (string);
  'plugin'?: (string);
  'function'?: (string);
  'args'?: (_google_protobuf_Struct | null);
  'context'?: (_google_protobuf_Struct | null);
  'trustTier'?: (string);
  'traceId'?: (string);
  'approvalId'?: (string);
  'sessionId'?: (string);
}

export interface PolicyRequest__Output {
  'agentId': (string);
  'action': (string);
  'resource': (string);
  'plugin': (string);
  'function': (string);
  'args': (_google_protobuf_Struct__Output | null);
  'context': (_google_protobuf_Struct__Output | null);
  'trustTier': (string);
  'traceId': (string);
  'approvalId': (string);
  'sessionId': (string);
}
