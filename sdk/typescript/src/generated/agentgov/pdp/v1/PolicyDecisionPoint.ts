// Original file: proto/pdp.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { PolicyChangeEvent as _agentgov_pdp_v1_PolicyChangeEvent, PolicyChangeEvent__Output as _agentgov_pdp_v1_PolicyChangeEvent__Output } from '../../../agentgov/pdp/v1/PolicyChangeEvent';
import type { PolicyRequest as _agentgov_pdp_v1_PolicyRequest, PolicyRequest__Output as _agentgov_pdp_v1_PolicyRequest__Output } from '../../../agentgov/pdp/v1/PolicyRequest';
import type { PolicyResponse as _agentgov_pdp_v1_PolicyResponse, PolicyResponse__Output as _agentgov_pdp_v1_PolicyResponse__Output } from '../../../agentgov/pdp/v1/PolicyResponse';
import type { PolicySubscription as _agentgov_pdp_v1_PolicySubscription, PolicySubscription__Output as _agentgov_pdp_v1_PolicySubscription__Output } from '../../../agentgov/pdp/v1/PolicySubscription';

export interface PolicyDecisionPointClient extends grpc.Client {
  Evaluate(argument: _agentgov_pdp_v1_PolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  Evaluate(argument: _agentgov_pdp_v1_PolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  Evaluate(argument: _agentgov_pdp_v1_PolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  Evaluate(argument: _agentgov_pdp_v1_PolicyRequest, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  evaluate(argument: _agentgov_pdp_v1_PolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  evaluate(argument: _agentgov_pdp_v1_PolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  evaluate(argument: _agentgov_pdp_v1_PolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  evaluate(argument: _agentgov_pdp_v1_PolicyRequest, callback: grpc.requestCallback<_agentgov_pdp_v1_PolicyResponse__Output>): grpc.ClientUnaryCall;
  
  EvaluateStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse__Output>;
  EvaluateStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse__Output>;
  evaluateStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse__Output>;
  evaluateStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse__Output>;
  
  Subscribe(argument: _agentgov_pdp_v1_PolicySubscription, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentgov_pdp_v1_PolicyChangeEvent__Output>;
  Subscribe(argument: _agentgov_pdp_v1_PolicySubscription, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentgov_pdp_v1_PolicyChangeEvent__Output>;
  subscribe(argument: _agentgov_pdp_v1_PolicySubscription, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentgov_pdp_v1_PolicyChangeEvent__Output>;
  subscribe(argument: _agentgov_pdp_v1_PolicySubscription, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentgov_pdp_v1_PolicyChangeEvent__Output>;
  
}

export interface PolicyDecisionPointHandlers extends grpc.UntypedServiceImplementation {
  Evaluate: grpc.handleUnaryCall<_agentgov_pdp_v1_PolicyRequest__Output, _agentgov_pdp_v1_PolicyResponse>;
  
  EvaluateStream: grpc.handleBidiStreamingCall<_agentgov_pdp_v1_PolicyRequest__Output, _agentgov_pdp_v1_PolicyResponse>;
  
  Subscribe: grpc.handleServerStreamingCall<_agentgov_pdp_v1_PolicySubscription__Output, _agentgov_pdp_v1_PolicyChangeEvent>;
  
}

export interface PolicyDecisionPointDefinition extends grpc.ServiceDefinition {
  Evaluate: MethodDefinition<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse, _agentgov_pdp_v1_PolicyRequest__Output, _agentgov_pdp_v1_PolicyResponse__Output>
  EvaluateStream: MethodDefinition<_agentgov_pdp_v1_PolicyRequest, _agentgov_pdp_v1_PolicyResponse, _agentgov_pdp_v1_PolicyRequest__Output, _agentgov_pdp_v1_PolicyResponse__Output>
  Subscribe: MethodDefinition<_agentgov_pdp_v1_PolicySubscription, _agentgov_pdp_v1_PolicyChangeEvent, _agentgov_pdp_v1_PolicySubscription__Output, _agentgov_pdp_v1_PolicyChangeEvent__Output>
}
