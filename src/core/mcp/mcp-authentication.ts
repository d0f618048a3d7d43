import { Injectable } from '@nestjs/common';
import { AgentAuthenticator, AuthenticatedAgent } from '../decision/agent-authenticator';

/** Who an MCP request's bearer token speaks for, given the resource URL it was sent to (RFC 8707). */
export interface McpAuthentication {
  /** The authenticated agent, or a 401 AppError (answered with the resource metadata's address). */
  authenticate(authorization: string | undefined, resourceUrl: string): Promise<AuthenticatedAgent>;
}

export const MCP_AUTHENTICATION = Symbol('McpAuthentication');

/** Agent tokens, on the gateway and the sidecar alike: every request is checked, so a revoked agent fails at its next one, inside a session too. */
@Injectable()
export class AgentTokenMcpAuthentication implements McpAuthentication {
  constructor(private readonly agents: AgentAuthenticator) {}

  authenticate(authorization: string | undefined): Promise<AuthenticatedAgent> {
    return this.agents.authenticate(authorization);
  }
}
