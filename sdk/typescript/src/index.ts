export { GovernanceClient, SoftDenial } from './governance-client';
export type { AuditRecord, CheckOptions } from './governance-client';
export { ApprovalPendingError, GatewayRejectedError, GatewayTimeoutError, GatewayUnavailableError, PolicyDeniedError } from './errors';
export type { RejectionCode } from './errors';
export type { FailureMode, GovernanceOptions, PluginOptions } from './options';
export type { AnswerSource, ApprovalStatus, CheckResult } from './transport';
export { summaryOf } from './result-summary';
