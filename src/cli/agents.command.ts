import { Option, SubCommand } from 'nest-commander';
import { AgentsService } from '../gateway/agents/agents.service';
import { ADMIN_TIERS, CreateAgentDto } from '../gateway/agents/agents.dto';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../gateway/organizations/organizations.service';
import { parseDuration } from '../core/policy-engine/duration';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields, validated } from './cli-output';

interface CreateOptions {
  name: string;
  tier?: string;
  tags?: string[];
  org?: string;
}

const CLI_ACTOR = 'cli' as const;

@SubCommand({ name: 'create', description: 'Create an agent and print its id and token' })
export class AgentsCreateCommand extends CliCommand {
  constructor(
    private readonly agents: AgentsService,
    private readonly organizations: OrganizationsService,
  ) {
    super();
  }

  async run(_args: string[], options: CreateOptions): Promise<void> {
    try {
      const orgId = options.org ?? BOOTSTRAP_ORG_ID;
      await this.organizations.get(orgId);
      const dto = await validated(CreateAgentDto, { name: options.name, trustTier: options.tier, tags: options.tags });
      const agent = await this.agents.create({ orgId, tokenId: CLI_ACTOR }, dto);
      printFields({ id: agent.id, name: agent.name, trustTier: agent.trustTier, org: orgId, token: agent.token, expiresAt: agent.tokenExpiresAt });
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--name <name>', description: 'Display name', required: true })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--tier <tier>', description: 'Trust tier: unverified, verified, trusted, privileged (default unverified)' })
  parseTier(value: string): string {
    if (!(ADMIN_TIERS as readonly string[]).includes(value)) throw new CliError(`--tier must be one of: ${ADMIN_TIERS.join(', ')}`);
    return value;
  }

  @Option({ flags: '--tags <tags>', description: 'Comma-separated tags, e.g. finance,pii' })
  parseTags(value: string): string[] {
    return value.split(',').map((tag) => tag.trim()).filter((tag) => tag !== '');
  }

  @Option({ flags: '--org <orgId>', description: `Organization (default ${BOOTSTRAP_ORG_ID})` })
  parseOrg(value: string): string {
    return value;
  }
}

@SubCommand({ name: 'list', description: 'List active agents' })
export class AgentsListCommand extends CliCommand {
  constructor(
    private readonly agents: AgentsService,
    private readonly organizations: OrganizationsService,
  ) {
    super();
  }

  async run(_args: string[], options: { org?: string }): Promise<void> {
    try {
      const orgId = options.org ?? BOOTSTRAP_ORG_ID;
      await this.organizations.get(orgId);
      for (const agent of await this.agents.list({ orgId, tokenId: CLI_ACTOR })) {
        process.stdout.write(`${agent.id}\t${agent.trustTier}\t${agent.name}\t${agent.tags.join(',')}\n`);
      }
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--org <orgId>', description: `Organization (default ${BOOTSTRAP_ORG_ID})` })
  parseOrg(value: string): string {
    return value;
  }
}

@SubCommand({ name: 'revoke', arguments: '<agentId>', description: 'Revoke an agent: immediate and permanent' })
export class AgentsRevokeCommand extends CliCommand {
  constructor(private readonly agents: AgentsService) {
    super();
  }

  async run([agentId]: string[]): Promise<void> {
    try {
      const orgId = await this.agents.ownerOf(agentId);
      const agent = await this.agents.revoke({ orgId, tokenId: CLI_ACTOR }, agentId);
      printFields({ id: agent.id, status: agent.status, revokedAt: agent.revokedAt });
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'token', arguments: '<agentId>', description: 'Print a fresh token for an existing agent' })
export class AgentsTokenCommand extends CliCommand {
  constructor(private readonly agents: AgentsService) {
    super();
  }

  async run([agentId]: string[], options: { ttl?: number }): Promise<void> {
    try {
      const orgId = await this.agents.ownerOf(agentId);
      const issued = await this.agents.issueToken({ orgId, tokenId: CLI_ACTOR }, agentId, options.ttl);
      printFields({ id: agentId, token: issued.token, expiresAt: issued.expiresAt });
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--ttl <duration>', description: 'Lifetime, e.g. 90m or 7d (default AGENT_TOKEN_TTL)' })
  parseTtl(value: string): number {
    let ms: number;
    try {
      ms = parseDuration(value);
    } catch {
      throw new CliError(`--ttl ${value}: expected a duration like 90m, 24h or 7d`);
    }
    // As AGENT_TOKEN_TTL refuses 0s: the token would be printed already expired (or nearly).
    if (ms < 1000) throw new CliError(`--ttl ${value}: must be at least 1s`);
    return ms;
  }
}

@SubCommand({
  name: 'agents',
  description: 'Manage agents',
  subCommands: [AgentsCreateCommand, AgentsListCommand, AgentsRevokeCommand, AgentsTokenCommand],
})
export class AgentsCommand extends CommandGroup {}
