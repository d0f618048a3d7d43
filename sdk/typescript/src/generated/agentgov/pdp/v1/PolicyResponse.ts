// Original file: proto/pdp.proto

import type { Decision as _agentgov_pdp_v1_Decision, Decision__Output as _agentgov_pdp_v1_Decision__Output } from '../../../agentgov/pdp/v1/Decision';
import type { Long } from '@grpc/proto-loader';

export interface PolicyResponse {
  'decision'?: (_agentgov_pdp_v1_Decision);
  'reason'?: (string);
  'policy'?: (string);
  'rule'?: (string);
  'policyVersion'?: (number | string | Long);
  'traceId'?: (string);
  'latencyMs'?: (number | string);
  'decisionId'?: (string);
  'cacheable'?: (boolean);
  'cacheTtlMs'?: (number | string | Long);
  'enforced'?: (boolean);
  'approvalId'?: (string);
  'approvalExpiresAt'?: (string);
}

export interface PolicyResponse__Output {
  'decision': (_agentgov_pdp_v1_Decision__Output);
  'reason': (string);
  'policy': (string);
  'rule': (string);
  'policyVersion': (number);
  'traceId': (string);
  'latencyMs': (number);
  'decisionId': (string);
  'cacheable': (boolean);
  'cacheTtlMs': (number);
  'enforced': (boolean);
  'approvalId': (string);
  'approvalExpiresAt': (string);
}
