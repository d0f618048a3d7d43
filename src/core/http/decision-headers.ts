import type { Decision } from '../policy-engine/types';
import { ServiceHeader } from '../common/service-header';

/**
 * The four X-Service-* headers (docs/proxy.md "Headers on every answer"), set
 * on every response the proxy gives after a decision, allowed or denied. Returned as a plain
 * object so they can join the upstream's headers in one writeHead.
 */
export function decisionHeaders(decision: Decision, traceId: string, agentId: string): Record<string, string> {
  return {
    [ServiceHeader.Decision]: decision.effect,
    [ServiceHeader.Policy]: decision.policy,
    [ServiceHeader.TraceId]: traceId,
    [ServiceHeader.AgentId]: agentId,
  };
}
