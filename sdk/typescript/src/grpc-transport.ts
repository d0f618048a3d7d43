import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { GatewayRejectedError, GatewayTimeoutError, GatewayUnavailableError, RejectionCode, retryAfterOf } from './errors';
import type { PolicyChangeEvent__Output as PolicyChangeEvent } from './generated/agentgov/pdp/v1/PolicyChangeEvent';
import type { PolicyDecisionPointClient } from './generated/agentgov/pdp/v1/PolicyDecisionPoint';
import type { PolicyResponse__Output as PolicyResponse } from './generated/agentgov/pdp/v1/PolicyResponse';
import type { Struct } from './generated/google/protobuf/Struct';
import type { Value } from './generated/google/protobuf/Value';
import type { ProtoGrpcType } from './generated/pdp';
import { PDP_DESCRIPTOR } from './generated/pdp-descriptor';
import type { CheckRequest, GatewayDecision, Transport } from './transport';

export type { PolicyChangeEvent };

const definition = protoLoader.fromJSON(PDP_DESCRIPTOR, { longs: Number, enums: String, defaults: true, oneofs: true });
const pdp = (grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType).agentgov.pdp.v1;

const REJECTIONS: Partial<Record<grpc.status, RejectionCode>> = {
  [grpc.status.UNAUTHENTICATED]: 'unauthenticated',
  [grpc.status.INVALID_ARGUMENT]: 'invalid_argument',
  [grpc.status.NOT_FOUND]: 'not_found',
  [grpc.status.PERMISSION_DENIED]: 'permission_denied',
  [grpc.status.RESOURCE_EXHAUSTED]: 'resource_exhausted',
};

/** The PDP over gRPC (the default transport), and its Subscribe stream. */
export class GrpcTransport implements Transport {
  readonly name = 'grpc';
  private readonly client: PolicyDecisionPointClient;
  private readonly metadata = new grpc.Metadata();

  constructor(address: string, apiKey: string, tls: boolean) {
    this.client = new pdp.PolicyDecisionPoint(address, tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure());
    this.metadata.set('x-api-key', apiKey);
  }

  /** One Evaluate call with a deadline of `timeoutMs`. */
  evaluate(request: CheckRequest, timeoutMs: number): Promise<GatewayDecision> {
    const message = { ...request, args: toStruct(request.args), context: toStruct(request.context) };
    return new Promise((resolve, reject) => {
      this.client.Evaluate(message, this.metadata, { deadline: Date.now() + timeoutMs }, (error, response) => {
        if (error?.code === grpc.status.DEADLINE_EXCEEDED) reject(new GatewayTimeoutError(`gRPC Evaluate: no answer within ${timeoutMs} ms`));
        else if (error) reject(transportError(error));
        else resolve(decisionOf(response!));
      });
    });
  }

  /** Follows the organization's changes after `sinceVersion`; returns the function that stops it. */
  subscribe(sinceVersion: number, onChange: (event: PolicyChangeEvent) => void, onEnd: (error: Error) => void): () => void {
    const call = this.client.Subscribe({ sinceVersion }, this.metadata);
    let ended = false;
    const end = (error: Error) => {
      if (ended) return;
      ended = true;
      onEnd(error);
    };
    call.on('data', onChange);
    call.on('error', (error: grpc.ServiceError) => end(transportError(error)));
    call.on('end', () => end(new GatewayUnavailableError('the Subscribe stream ended')));
    return () => {
      ended = true;
      call.cancel();
    };
  }

  /** Closes the channel (ends every call on it). */
  close(): void {
    this.client.close();
  }
}

function decisionOf(response: PolicyResponse): GatewayDecision {
  return {
    decision: decisionName(response.decision),
    reason: response.reason,
    policy: response.policy,
    rule: response.rule,
    policyVersion: response.policyVersion,
    traceId: response.traceId,
    decisionId: response.decisionId,
    cacheable: response.cacheable,
    cacheTtlMs: response.cacheTtlMs,
    enforced: response.enforced,
    approvalId: response.decision === 'DECISION_PENDING' ? response.approvalId : '',
    approvalExpiresAt: response.decision === 'DECISION_PENDING' ? response.approvalExpiresAt : '',
  };
}

/** Anything but an allow or a pending approval is a denial: an unknown decision never lets a call run. */
function decisionName(decision: PolicyResponse['decision']): GatewayDecision['decision'] {
  if (decision === 'DECISION_ALLOW') return 'allow';
  return decision === 'DECISION_PENDING' ? 'pending' : 'deny';
}

function transportError(error: grpc.ServiceError): Error {
  const rejection = REJECTIONS[error.code];
  if (rejection !== undefined) return new GatewayRejectedError(rejection, error.details, retryAfterOf(error.metadata?.get('retry-after')[0]));
  if (error.code === grpc.status.DEADLINE_EXCEEDED) return new GatewayTimeoutError(`gRPC: ${error.details}`);
  return new GatewayUnavailableError(`gRPC ${grpc.status[error.code]}: ${error.details}`, error.code === grpc.status.UNAVAILABLE);
}

/** A google.protobuf.Struct of a JSON-like object (what the JSON form of the object says). */
function toStruct(object: Record<string, unknown>): Struct {
  const plain = JSON.parse(JSON.stringify(object)) as Record<string, unknown>;
  return { fields: Object.fromEntries(Object.entries(plain).map(([key, value]) => [key, toValue(value)])) };
}

function toValue(value: unknown): Value {
  if (value === null) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
  return { structValue: toStruct(value as Record<string, unknown>) };
}
