import { createHash } from 'node:crypto';
import type { Decision } from '../policy-engine/types';
import type { Principal } from './agent-authenticator';
import type { ApprovalSubject } from './approval-ports';
import { canonicalJson } from '../common/canonical-json';

/** What of a decision request an approval binds (a DecisionRequest). */
export interface BoundRequest {
  source: string;
  traceId: string;
  action: string;
  derivedAction?: string;
  resource: string;
  plugin: string;
  function: string;
  args: Readonly<Record<string, unknown>>;
  context: Readonly<Record<string, unknown>>;
  tool?: unknown;
  sessionId?: string;
  method?: string | null;
  path?: string | null;
  /** The SHA-256 of what the request carries, where the transport has more than `args` (the proxy's query and body). */
  fingerprint?: () => Promise<string>;
}

/**
 * What an approval is bound to (docs/approvals.md, docs/security.md "Approvals"): the whole
 * decision input, so that a retry differing in anything a policy could read, or anything the
 * upstream acts on, is another request. Beside the organization and agent: the entry point, the
 * declared and derived actions, plugin and function, HTTP method and path, and the holds that
 * asked for it; `fingerprint` covers the rest (resource, context, delegation chain, MCP tool, session and
 * what the request carries: the proxy's query and body bytes, a call's arguments).
 */
export async function approvalSubject(principal: Principal, request: BoundRequest, holds: readonly Decision[]): Promise<ApprovalSubject> {
  const carried = request.fingerprint !== undefined ? await request.fingerprint() : sha256(canonicalJson(request.args));
  const bound = {
    carried,
    resource: request.resource,
    context: request.context,
    chain: principal.delegation.chain,
    tool: request.tool ?? null,
    session: request.sessionId ?? null,
  };
  return {
    orgId: principal.agent.orgId,
    agentId: principal.agent.id,
    agentName: principal.agent.name,
    source: request.source,
    action: request.action,
    derivedAction: request.derivedAction !== undefined && request.derivedAction !== request.action ? request.derivedAction : null,
    plugin: request.plugin,
    function: request.function,
    method: request.method ?? null,
    path: request.path ?? null,
    holds: holdsOf(holds),
    fingerprint: sha256(canonicalJson(bound)),
    traceId: request.traceId,
  };
}

/** The `require_approval` rules that held a request, as `policy: rule`, sorted and without repeats. */
export function holdsOf(holds: readonly Decision[]): string[] {
  return [...new Set(holds.map((hold) => `${hold.policy}: ${hold.rule ?? ''}`))].sort();
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
