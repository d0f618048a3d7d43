/** What the client asks the gateway. */
export interface CheckRequest {
  agentId: string;
  plugin: string;
  function: string;
  args: Record<string, unknown>;
  context: Record<string, unknown>;
  trustTier: string;
}

/** The gateway's answer, the same whichever transport brought it. */
export interface GatewayDecision {
  decision: 'allow' | 'deny';
  reason: string;
  policy: string;
  rule: string;
  policyVersion: number;
  traceId: string;
  decisionId: string;
  cacheable: boolean;
  cacheTtlMs: number;
  /** False when the gateway's MODE=audit let a denial through (decision allow, the denying policy and reason named). */
  enforced: boolean;
}

/** Where a check's answer came from. */
export type AnswerSource = 'grpc' | 'http' | 'cache' | 'failure-mode';

/** The result of `check()`: the gateway's answer, or the failure mode's. */
export interface CheckResult extends GatewayDecision {
  allowed: boolean;
  via: AnswerSource;
}

/** A way to ask the PDP for decisions. Errors: GatewayTimeoutError, GatewayUnavailableError, GatewayRejectedError. */
export interface Transport {
  readonly name: 'grpc' | 'http';
  evaluate(request: CheckRequest, timeoutMs: number): Promise<GatewayDecision>;
  /** Releases the transport's connections. */
  close(): void;
}
