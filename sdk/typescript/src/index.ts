export { GovernanceClient, SoftDenial } from './governance-client';
export type { AuditRecord } from './governance-client';
export { GatewayRejectedError, GatewayTimeoutError, GatewayUnavailableError, PolicyDeniedError } from './errors';
export type { RejectionCode } from './errors';
export type { FailureMode, GovernanceOptions, PluginOptions } from './options';
export type { AnswerSource, CheckResult } from './transport';
export { summaryOf } from './result-summary';
