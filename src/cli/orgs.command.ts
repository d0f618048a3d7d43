import { Option, SubCommand } from 'nest-commander';
import { OrganizationsService } from '../gateway/organizations/organizations.service';
import { PLAN_IDS, PlanId } from '../core/config/plans';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields } from './cli-output';
import { isDisplayName } from '../core/common/validation';

interface CreateOptions {
  name: string;
  email?: string;
  plan?: PlanId;
}

@SubCommand({ name: 'create', description: 'Create an organization and print its admin token (shown once)' })
export class OrgsCreateCommand extends CliCommand {
  constructor(private readonly organizations: OrganizationsService) {
    super();
  }

  async run(_args: string[], options: CreateOptions): Promise<void> {
    try {
      const { organization, adminToken } = await this.organizations.create({ name: options.name, billingEmail: options.email, plan: options.plan });
      printFields({ id: organization.id, name: organization.name, plan: organization.plan, adminToken });
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--name <name>', description: 'Display name', required: true })
  parseName(value: string): string {
    const name = value.trim();
    if (name.length > 200 || !isDisplayName(name)) throw new CliError('--name must be 1-200 characters with a visible one, and no control characters');
    return name;
  }

  @Option({ flags: '--email <email>', description: 'Billing email' })
  parseEmail(value: string): string {
    if (!/^[^@\s]+@[^@\s]+$/.test(value)) throw new CliError(`--email ${value} is not an email address`);
    return value;
  }

  @Option({ flags: '--plan <plan>', description: `Plan: ${PLAN_IDS.join(', ')} (default free)` })
  parsePlan(value: string): PlanId {
    if (!(PLAN_IDS as readonly string[]).includes(value)) throw new CliError(`--plan must be one of: ${PLAN_IDS.join(', ')}`);
    return value as PlanId;
  }
}

@SubCommand({ name: 'list', description: 'List organizations' })
export class OrgsListCommand extends CliCommand {
  constructor(private readonly organizations: OrganizationsService) {
    super();
  }

  async run(): Promise<void> {
    try {
      for (const organization of await this.organizations.list()) {
        process.stdout.write(`${organization.id}\t${organization.plan}\t${organization.name}\n`);
      }
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({
  name: 'rotate-token',
  arguments: '<orgId>',
  description: 'Issue a new admin token for an organization, revoking the previous one (for org_default: the bootstrap token)',
})
export class OrgsRotateTokenCommand extends CliCommand {
  constructor(private readonly organizations: OrganizationsService) {
    super();
  }

  async run([orgId]: string[]): Promise<void> {
    try {
      printFields({ id: orgId, adminToken: await this.organizations.rotateAdminToken(orgId) });
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'orgs', description: 'Manage organizations', subCommands: [OrgsCreateCommand, OrgsListCommand, OrgsRotateTokenCommand] })
export class OrgsCommand extends CommandGroup {}
