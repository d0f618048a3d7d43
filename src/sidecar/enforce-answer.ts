import type { ServerResponse } from 'node:http';
import { ServiceHeader } from '../core/common/service-header';
import { roundMs } from '../core/audit-record/audit-record';
import type { Verdict } from '../core/decision/decision.service';
import { jsonNumber, jsonString } from '../core/common/json-text';

/**
 * What /enforce answers for one action, as the members of a JSON object (no braces), written
 * by hand (json-text.ts): `decision` (`allow`|`deny`), `policy`, `rule`, `latencyMs`,
 * `decisionId`, and for a denial `reason`; `wouldDeny: true` in MODE=audit, where a would-be
 * denial answers `allow` and nothing is blocked; `rateLimited: true` and `retryAfter` (seconds)
 * for a tripped rate limit. An action a `require_approval` rule holds answers `pending` with the
 * `approvalId` to retry with and its `expiresAt` (docs/approvals.md).
 */
export function answerMembers(verdict: Verdict, latencyMs: number): string {
  const { decision, pending } = verdict;
  if (pending !== undefined) {
    return `"decision":"pending","policy":${jsonString(decision.policy)},"rule":${jsonString(decision.rule)},"latencyMs":${jsonNumber(roundMs(latencyMs))},"decisionId":${jsonString(verdict.id)},"reason":${jsonString(decision.reason)},"approvalId":${jsonString(pending.approvalId)},"expiresAt":${jsonString(pending.expiresAt)}`;
  }
  const effect = verdict.enforced ? decision.effect : 'allow';
  let members = `"decision":"${effect}","policy":${jsonString(decision.policy)},"rule":${jsonString(decision.rule)},"latencyMs":${jsonNumber(roundMs(latencyMs))},"decisionId":${jsonString(verdict.id)}`;
  if (decision.effect === 'deny') {
    members += `,"reason":${jsonString(decision.reason)}`;
    if (!verdict.enforced) members += ',"wouldDeny":true';
    if (decision.rateLimit) members += `,"rateLimited":true,"retryAfter":${jsonNumber(decision.rateLimit.retryAfterSeconds)}`;
  }
  return members;
}

/**
 * Sends JSON text with the trace id header. The headers go as a flat list: no object to build
 * and walk per answer.
 */
export function sendJsonText(response: ServerResponse, status: number, json: string, traceId: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response.writeHead(status, [ServiceHeader.TraceId, traceId, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(json))]);
  response.end(json);
}
