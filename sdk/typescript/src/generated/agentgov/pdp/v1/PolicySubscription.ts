// Original file: proto/pdp.proto

import type { Long } from '@grpc/proto-loader';

export interface PolicySubscription {
  'orgId'?: (string);
  'sinceVersion'?: (number | string | Long);
}

export interface PolicySubscription__Output {
  'orgId': (string);
  'sinceVersion': (number);
}
