// The ES module entry of @agentgov/sdk (`import ... from '@agentgov/sdk'`): the CommonJS build
// re-exported, so an application that both imports and requires the SDK gets one copy of each
// class (`instanceof PolicyDeniedError` holds whichever way the error was made). The names are
// those of src/index.ts; test/package.spec.ts fails when the two differ.
import sdk from '../dist/index.js';

export const {
  GovernanceClient,
  SoftDenial,
  GatewayRejectedError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  PolicyDeniedError,
  ApprovalPendingError,
  summaryOf,
  inSession,
  currentSession,
  DecisionTokenError,
  DecisionTokenVerifier,
  requestHash,
  TOOL_CALL_TOKEN_KEY,
  toolCallHash,
  canonicalJson,
  decisionTokenMiddleware,
} = sdk;
