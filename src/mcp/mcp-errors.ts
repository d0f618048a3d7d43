import { ErrorCode as SdkErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode } from '../common/error-code';
import type { Verdict } from '../decisions/decision.service';
import type { Decision } from '../policy-engine/types';
import type { PinState } from './tool-pins';

/**
 * The JSON-RPC error codes the MCP gateway answers with (docs/mcp.md): the protocol's own, and
 * codes of the server-error range (-32000 to -32099) for what the gateway decided.
 */
export const McpErrorCode = {
  InvalidParams: SdkErrorCode.InvalidParams,
  /** Denied by policy, or held by its pin: `data` carries the proxy's 403 fields (docs/proxy.md). */
  Forbidden: -32003,
  /** A rate limit tripped: `data` carries the proxy's 429 fields (docs/proxy.md). */
  RateLimited: -32029,
  /** The upstream MCP server is down or did not answer in time. */
  UpstreamUnavailable: -32002,
  /** A `require_approval` rule holds the call: `data` carries the approval to retry with. */
  ApprovalRequired: -32010,
} as const;

/** The policy name a denial of a held tool carries. */
export const TOOL_PINNING_POLICY = 'tool-pinning';

/**
 * The fixed denial of a tool whose definition changed since it was pinned (or, at the sidecar
 * with its gateway away, that nobody pinned yet); with `alert`, the
 * alert rule that reports it (always raised, as `alert` rules are: the change must be seen).
 */
export function heldDenial(server: string, tool: string, state: PinState, alert: boolean): Decision {
  const reason =
    state.unpinned === undefined
      ? `Tool ${tool} of MCP server ${server} changed its ${state.changes.join(' and ') || 'definition'} since it was pinned; it is held until an admin accepts the new definition (POST /admin/mcp/tools/${server}/${tool}/accept)`
      : `Tool ${tool} of MCP server ${server} is not pinned yet and ${state.unpinned}: it is held until it is pinned`;
  const rule = state.unpinned === undefined ? 'definition-changed' : 'not-pinned';
  const decision: Decision = { effect: 'deny', policy: TOOL_PINNING_POLICY, rule, reason };
  return alert ? { ...decision, alerts: [{ policy: TOOL_PINNING_POLICY, rule, reason }] } : decision;
}

/** A held call as the JSON-RPC error an MCP client receives: the approval to present in the retry's `_meta.approvalId`. */
export function pendingError(verdict: Verdict): McpError {
  const { decision, request, pending } = verdict;
  return new McpError(McpErrorCode.ApprovalRequired, `Waiting for a person's approval (${decision.policy}: ${decision.reason})`, {
    error: 'approval_required',
    approvalId: pending!.approvalId,
    expiresAt: pending!.expiresAt,
    message: `Retry with _meta.approvalId ${pending!.approvalId} once approved`,
    policy: decision.policy,
    reason: decision.reason,
    trace_id: request.traceId,
  });
}

/** A refused call as the JSON-RPC error an MCP client receives, with the fields the proxy's 403 and 429 bodies carry. */
export function mcpErrorOf(verdict: Verdict): McpError {
  const { decision, request } = verdict;
  if (decision.rateLimit) {
    return new McpError(McpErrorCode.RateLimited, `Rate limit exceeded: ${decision.reason}`, {
      error: ErrorCode.RateLimited,
      retry_after: decision.rateLimit.retryAfterSeconds,
      limit: decision.rateLimit.limit,
      policy: decision.policy,
      trace_id: request.traceId,
    });
  }
  return new McpError(McpErrorCode.Forbidden, `Denied by policy ${decision.policy}: ${decision.reason}`, {
    error: ErrorCode.Forbidden,
    reason: decision.reason,
    policy: decision.policy,
    action: request.action,
    trace_id: request.traceId,
  });
}
