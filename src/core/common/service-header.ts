/** Header names, in one place (docs/proxy.md, docs/pdp.md). */
export enum ServiceHeader {
  Decision = 'X-Service-Decision',
  Policy = 'X-Service-Policy',
  TraceId = 'X-Service-Trace-Id',
  AgentId = 'X-Service-Agent-Id',
  Action = 'X-Service-Action',
  ClientTraceId = 'X-Trace-ID',
  /** The approval a retried request presents (docs/approvals.md). */
  Approval = 'X-Service-Approval',
  /** The session a call belongs to (docs/policies.md "Sessions"). */
  Session = 'X-Service-Session',
  /** The gateway's signed proof of an allow, on forwarded requests (docs/security.md "Decision tokens"). */
  DecisionToken = 'X-Service-Decision-Token',
  TraceParent = 'traceparent',
  AdminToken = 'X-Admin-Token',
  ApiKey = 'X-Api-Key',
  RetryAfter = 'Retry-After',
}

/** Request headers starting with this prefix become `context.<name>` in the decision input. */
export const CONTEXT_HEADER_PREFIX = 'x-service-context-';
