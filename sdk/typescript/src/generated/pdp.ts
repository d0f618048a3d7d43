import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { PolicyChangeEvent as _agentgov_pdp_v1_PolicyChangeEvent, PolicyChangeEvent__Output as _agentgov_pdp_v1_PolicyChangeEvent__Output } from './agentgov/pdp/v1/PolicyChangeEvent';
import type { PolicyDecisionPointClient as _agentgov_pdp_v1_PolicyDecisionPointClient, PolicyDecisionPointDefinition as _agentgov_pdp_v1_PolicyDecisionPointDefinition } from './agentgov/pdp/v1/PolicyDecisionPoint';
import type { PolicyRequest as _agentgov_pdp_v1_PolicyRequest, PolicyRequest__Output as _agentgov_pdp_v1_PolicyRequest__Output } from './agentgov/pdp/v1/PolicyRequest';
import type { PolicyResponse as _agentgov_pdp_v1_PolicyResponse, PolicyResponse__Output as _agentgov_pdp_v1_PolicyResponse__Output } from './agentgov/pdp/v1/PolicyResponse';
import type { PolicySubscription as _agentgov_pdp_v1_PolicySubscription, PolicySubscription__Output as _agentgov_pdp_v1_PolicySubscription__Output } from './agentgov/pdp/v1/PolicySubscription';
import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  agentgov: {
    pdp: {
      v1: {
        Decision: EnumTypeDefinition
        PolicyChangeEvent: MessageTypeDefinition<_agentgov_pdp_v1_PolicyChangeEvent, _agentgov_pdp_v1_PolicyChangeEvent__Output>
        PolicyDecisionPoint: SubtypeConstructor<typeof grpc.Client, _agentgov_pdp_v1_PolicyDecisionPointClient> & { service: _agentgov_pdp_v1_PolicyDecisionPointDefinition }
        PolicyRequest: MessageTypeDefinition<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyRequest__Output>
        PolicyResponse: MessageTypeDefinition<_agentgov_pdp_v1_PolicyResponse, _agentgov_pdp_v1_PolicyResponse__Output>
        PolicySubscription: MessageTypeDefinition<_agentgov_pdp_v1_PolicySubscription, _agentgov_pdp_v1_PolicySubscription__Output>
      }
    }
  }
  google: {
    protobuf: {
      ListValue: MessageTypeDefinition<_google_protobuf_ListValue, _google_protobuf_ListValue__Output>
      NullValue: EnumTypeDefinition
      Struct: MessageTypeDefinition<_google_protobuf_Struct, _google_protobuf_Struct__Output>
      Value: MessageTypeDefinition<_google_protobuf_Value, _google_protobuf_Value__Output>
    }
  }
}

