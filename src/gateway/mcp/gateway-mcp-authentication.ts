import { Inject, Injectable } from '@nestjs/common';
import { decodeJwt } from 'jose';
import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AgentAuthenticator, AuthenticatedAgent, DIRECT } from '../../core/decision/agent-authenticator';
import { AGENT_SOURCE, AgentSource } from '../../core/decision/decision-sources';
import { OidcVerifier } from '../access/oidc-verifier';
import type { McpAuthentication } from '../../core/mcp/mcp-authentication';

/**
 * The gateway's MCP credentials (docs/mcp.md, "Authorization"): an agent token, or, with
 * OIDC_ISSUER set, a token of that identity provider whose audience is the MCP server's URL
 * (RFC 8707), of a managed-identity client registered with an agent (POST /admin/oidc-clients,
 * `agentId`): it acts as that agent. A provider's token for any other audience is refused.
 */
@Injectable()
export class GatewayMcpAuthentication implements McpAuthentication {
  constructor(
    private readonly agents: AgentAuthenticator,
    private readonly oidc: OidcVerifier,
    private readonly config: AppConfig,
    @Inject(AGENT_SOURCE) private readonly agentSource: AgentSource,
  ) {}

  async authenticate(authorization: string | undefined, resourceUrl: string): Promise<AuthenticatedAgent> {
    if (authorization === undefined || !this.isProviderToken(authorization)) return this.agents.authenticate(authorization);
    const { orgId, agentId } = await this.oidc.verifyForResource(authorization, resourceUrl);
    const agent = await this.agentSource.get(agentId);
    if (agent === null || agent.orgId !== orgId) throw new AppError(ErrorCode.Unauthorized, `The agent of this managed identity no longer exists`);
    if (agent.revoked) throw new AppError(ErrorCode.Unauthorized, 'Agent has been revoked');
    const nowSeconds = Math.floor(Date.now() / 1000);
    const claims = { sub: agent.id, name: agent.name, trust: agent.trustTier, tier: agent.trustTier, tags: [...agent.tags], org: orgId, iat: nowSeconds, exp: nowSeconds, iss: this.config.oidc.issuer! };
    return { agent, claims, delegation: DIRECT };
  }

  /** A bearer token the identity provider issued (its `iss`), not an agent token: only a look, the verification follows. */
  private isProviderToken(authorization: string): boolean {
    const issuer = this.config.oidc.issuer;
    if (issuer === undefined) return false;
    try {
      const iss = decodeJwt(authorization.replace(/^bearer\s+/i, '').trim()).iss;
      return typeof iss === 'string' && iss.replace(/\/+$/, '') === issuer;
    } catch {
      return false;
    }
  }
}
