// Original file: proto/pdp.proto

import type { Long } from '@grpc/proto-loader';

export interface PolicyChangeEvent {
  'policyVersion'?: (number | string | Long);
  'changed'?: (string)[];
  'kind'?: (string);
  'at'?: (string);
  'orgId'?: (string);
}

export interface PolicyChangeEvent__Output {
  'policyVersion': (number);
  'changed': (string)[];
  'kind': (string);
  'at': (string);
  'orgId': (string);
}
