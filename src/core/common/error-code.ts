import { status as GrpcStatus } from '@grpc/grpc-js';

/** Every error code the HTTP API answers with, and its status. */
export enum ErrorCode {
  InvalidRequest = 'invalid_request',
  InvalidJson = 'invalid_json',
  InvalidPolicy = 'invalid_policy',
  InvalidPeriod = 'invalid_period',
  InvalidSignature = 'invalid_signature',
  Unauthorized = 'unauthorized',
  Forbidden = 'forbidden',
  PlanLimitExceeded = 'plan_limit_exceeded',
  NotFound = 'not_found',
  Conflict = 'conflict',
  PolicyTestsFailed = 'policy_tests_failed',
  AgentRevoked = 'agent_revoked',
  PayloadTooLarge = 'payload_too_large',
  UnsupportedMediaType = 'unsupported_media_type',
  RateLimited = 'rate_limited',
  BudgetExceeded = 'budget_exceeded',
  QuotaExceeded = 'quota_exceeded',
  InternalError = 'internal_error',
  PaymentProviderError = 'payment_provider_error',
  BadGateway = 'bad_gateway',
  NoUpstream = 'no_upstream',
  ServiceUnavailable = 'service_unavailable',
  BillingDisabled = 'billing_disabled',
  GatewayTimeout = 'gateway_timeout',
}

/** HTTP status of each code; the switch is exhaustive so a new code cannot be forgotten. */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.InvalidRequest:
    case ErrorCode.InvalidJson:
    case ErrorCode.InvalidPolicy:
    case ErrorCode.InvalidPeriod:
    case ErrorCode.InvalidSignature:
      return 400;
    case ErrorCode.Unauthorized:
      return 401;
    case ErrorCode.Forbidden:
    case ErrorCode.PlanLimitExceeded:
      return 403;
    case ErrorCode.NotFound:
      return 404;
    case ErrorCode.Conflict:
    case ErrorCode.AgentRevoked:
    case ErrorCode.PolicyTestsFailed:
      return 409;
    case ErrorCode.PayloadTooLarge:
      return 413;
    case ErrorCode.UnsupportedMediaType:
      return 415;
    case ErrorCode.RateLimited:
    case ErrorCode.BudgetExceeded:
    case ErrorCode.QuotaExceeded:
      return 429;
    case ErrorCode.InternalError:
    case ErrorCode.PaymentProviderError:
      return 500;
    case ErrorCode.BadGateway:
    case ErrorCode.NoUpstream:
      return 502;
    case ErrorCode.ServiceUnavailable:
    case ErrorCode.BillingDisabled:
      return 503;
    case ErrorCode.GatewayTimeout:
      return 504;
  }
}

/** gRPC status of each code, beside the HTTP mapping; exhaustive like it. */
export function grpcStatusOf(code: ErrorCode): GrpcStatus {
  switch (code) {
    case ErrorCode.InvalidRequest:
    case ErrorCode.InvalidJson:
    case ErrorCode.InvalidPolicy:
    case ErrorCode.InvalidPeriod:
    case ErrorCode.InvalidSignature:
    case ErrorCode.PayloadTooLarge:
    case ErrorCode.UnsupportedMediaType:
      return GrpcStatus.INVALID_ARGUMENT;
    case ErrorCode.Unauthorized:
      return GrpcStatus.UNAUTHENTICATED;
    case ErrorCode.Forbidden:
    case ErrorCode.PlanLimitExceeded:
    case ErrorCode.AgentRevoked:
      return GrpcStatus.PERMISSION_DENIED;
    case ErrorCode.NotFound:
      return GrpcStatus.NOT_FOUND;
    case ErrorCode.Conflict:
      return GrpcStatus.ALREADY_EXISTS;
    case ErrorCode.PolicyTestsFailed:
      return GrpcStatus.FAILED_PRECONDITION;
    case ErrorCode.RateLimited:
    case ErrorCode.BudgetExceeded:
    case ErrorCode.QuotaExceeded:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case ErrorCode.InternalError:
    case ErrorCode.PaymentProviderError:
    case ErrorCode.BadGateway:
    case ErrorCode.NoUpstream:
      return GrpcStatus.INTERNAL;
    case ErrorCode.ServiceUnavailable:
    case ErrorCode.BillingDisabled:
    case ErrorCode.GatewayTimeout:
      return GrpcStatus.UNAVAILABLE;
  }
}
