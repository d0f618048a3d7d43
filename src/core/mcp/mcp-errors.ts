import { ErrorCode as SdkErrorCode, JSONRPCErrorResponse, McpError, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Verdict } from '../decision/decision.service';
import { approvalBody, denialBody, limitBody, Refusal } from '../decision/verdict-answer';
import type { Decision } from '../policy-engine/types';
import type { PinState } from './tool-pins';

/**
 * The JSON-RPC error codes the MCP gateway answers with (docs/mcp.md): the protocol's own, and
 * codes of the server-error range (-32000 to -32099) for what the gateway decided.
 */
export const McpErrorCode = {
  InvalidParams: SdkErrorCode.InvalidParams,
  InvalidRequest: SdkErrorCode.InvalidRequest,
  /** Denied by policy, or held by its pin: `data` carries the proxy's 403 fields (docs/proxy.md). */
  Forbidden: -32003,
  /** A rate limit tripped or a budget is spent: `data` carries the proxy's 429 fields (docs/proxy.md), `error` saying which. */
  RateLimited: -32029,
  /** The upstream MCP server is down or did not answer in time. */
  UpstreamUnavailable: -32002,
  /** A `require_approval` rule holds the call: `data` carries the approval to retry with. */
  ApprovalRequired: -32010,
} as const;

/** The policy name a denial of a held tool carries. */
export const TOOL_PINNING_POLICY = 'tool-pinning';

/**
 * The fixed denial of a definition held by its pin: changed since it was pinned, new on a server
 * whose others are pinned (MCP_PIN=strict), or (at the sidecar with its gateway away) pinned by
 * nobody yet; with `alert`, the alert rule that reports it (always raised, as `alert` rules are:
 * the change must be seen).
 */
export function heldDenial(server: string, tool: string, state: PinState, alert: boolean): Decision {
  const [rule, reason] = heldReason(server, tool, state);
  const decision: Decision = { effect: 'deny', policy: TOOL_PINNING_POLICY, rule, reason };
  return alert ? { ...decision, alerts: [{ policy: TOOL_PINNING_POLICY, rule, reason }] } : decision;
}

function heldReason(server: string, tool: string, state: PinState): [string, string] {
  const accept = `POST /admin/mcp/tools/${server}/${encodeURIComponent(tool)}/accept`;
  if (state.unpinned !== undefined) return ['not-pinned', `${tool} of MCP server ${server} is not pinned yet and ${state.unpinned}: it is held until it is pinned`];
  if (state.newcomer === true) return ['new-definition', `${tool} is new on MCP server ${server}, whose other definitions are pinned; it is held until an admin accepts it (${accept})`];
  return ['definition-changed', `${tool} of MCP server ${server} changed its ${state.changes.join(' and ') || 'definition'} since it was pinned; it is held until an admin accepts the new definition (${accept})`];
}

/** The alert of a definition first met on a server whose others were pinned before (MCP_PIN=on): pinned, and seen. */
export function newcomerAlert(server: string, tool: string): Decision {
  const reason = `${tool} is new on MCP server ${server}, whose other definitions were pinned before; it was pinned now (MCP_PIN=strict holds such a definition until accepted)`;
  return { effect: 'allow', policy: TOOL_PINNING_POLICY, rule: 'new-definition', reason, alerts: [{ policy: TOOL_PINNING_POLICY, rule: 'new-definition', reason }] };
}

/** A refusal the gateway answers for a message the agent sent: the JSON-RPC error response to its id. */
export function errorResponse(id: RequestId, error: McpError): JSONRPCErrorResponse {
  return { jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
}

/**
 * A refused call (outcomeOf: held, limited or denied) as the JSON-RPC error an MCP client
 * receives; `data` carries the fields of the proxy's 202, 429 and 403 bodies (verdict-answer.ts).
 */
export function mcpErrorOf(verdict: Verdict, outcome: Refusal): McpError {
  const { decision, request } = verdict;
  switch (outcome.kind) {
    case 'pending': {
      const data = approvalBody(verdict, '_meta.approvalId');
      return new McpError(McpErrorCode.ApprovalRequired, `Waiting for a person's approval (${decision.policy}: ${decision.reason})`, data);
    }
    case 'limited': {
      const { message, ...fields } = limitBody(outcome);
      return new McpError(McpErrorCode.RateLimited, message, { ...fields, policy: decision.policy, trace_id: request.traceId });
    }
    case 'denied': {
      const { message, ...fields } = denialBody(verdict);
      return new McpError(McpErrorCode.Forbidden, message, fields);
    }
  }
}
