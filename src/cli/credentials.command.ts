import { Option, SubCommand } from 'nest-commander';
import { CreateCredentialDto, CredentialView, MAX_VALUE_CHARS, PLACEMENTS, PlacementType } from '../gateway/credentials/credentials.dto';
import { CredentialsService } from '../gateway/credentials/credentials.service';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../gateway/organizations/organizations.service';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields, validated } from './cli-output';
import { readSecret } from './secret-input';

/** The actor the audit trail names for changes made with `ags`. */
const CLI_ACTOR = 'cli';

const VALUE_FILE_FLAGS = '--value-file <path>';
const VALUE_FILE_HELP = 'Read the secret from this file (`-`: standard input); without it, from standard input, typed without echo at a terminal';

/**
 * `--value` is declared only to be refused: an unknown option's error repeats the option as
 * given, and `--value=<secret>` would be printed back, after already sitting in the shell's
 * history and in `ps`.
 */
function refuseValueOption(): never {
  throw new CliError('the secret is never an argument (the shell history and `ps` would keep it): pipe it on standard input, type it at the prompt or use --value-file');
}

interface CreateOptions {
  route?: string;
  mcpServer?: string;
  type: PlacementType;
  name?: string;
  edge?: boolean;
  valueFile?: string;
  org?: string;
}

/** What every command prints of a credential: everything but its value, which it never had or no longer has. */
function printCredential(credential: CredentialView): void {
  printFields({
    id: credential.id,
    ...(credential.route !== null ? { route: credential.route } : { mcpServer: credential.mcpServer }),
    type: credential.type,
    ...(credential.name !== null ? { name: credential.name } : {}),
    edge: credential.edge,
    version: credential.version,
    ...(credential.rotatedAt !== null ? { rotatedAt: credential.rotatedAt } : {}),
    ...(credential.revokedAt !== null ? { revokedAt: credential.revokedAt } : {}),
  });
}

@SubCommand({ name: 'create', description: 'Store an upstream credential for a proxy route or an MCP server, its secret read from standard input or a file' })
export class CredentialsCreateCommand extends CliCommand {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly organizations: OrganizationsService,
  ) {
    super();
  }

  async run(_args: string[], options: CreateOptions): Promise<void> {
    try {
      const orgId = options.org ?? BOOTSTRAP_ORG_ID;
      await this.organizations.get(orgId);
      const fields = { route: options.route, mcpServer: options.mcpServer, type: options.type, name: options.name, edge: options.edge ?? false };
      // Checked before the secret is asked for: a mistake in the options costs no retyping.
      await validated(CreateCredentialDto, { ...fields, value: 'unchecked' });
      const value = await readSecret('credential value', MAX_VALUE_CHARS, options.valueFile);
      const dto = await validated(CreateCredentialDto, { ...fields, value });
      printCredential(await this.credentials.create({ orgId, tokenId: CLI_ACTOR }, dto));
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--route <route>', description: 'The proxy route: /proxy or /proxy/<prefix> (or --mcp-server)' })
  parseRoute(value: string): string {
    return value;
  }

  @Option({ flags: '--mcp-server <name>', description: 'An MCP server of MCP_SERVERS (or --route)' })
  parseMcpServer(value: string): string {
    return value;
  }

  @Option({ flags: '--type <type>', description: `Where it goes: ${PLACEMENTS.join(', ')}`, required: true })
  parseType(value: string): PlacementType {
    if (!(PLACEMENTS as readonly string[]).includes(value)) throw new CliError(`--type must be one of: ${PLACEMENTS.join(', ')}`);
    return value as PlacementType;
  }

  @Option({ flags: '--name <name>', description: 'The header or query parameter it goes in (header and query only)' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--edge', description: 'Also give it to the organization’s sidecars, sealed to each one’s key' })
  parseEdge(): boolean {
    return true;
  }

  @Option({ flags: VALUE_FILE_FLAGS, description: VALUE_FILE_HELP })
  parseValueFile(value: string): string {
    return value;
  }

  @Option({ flags: '--value <secret>', description: 'Refused: never give the secret as an argument' })
  parseValue(): never {
    refuseValueOption();
  }

  @Option({ flags: '--org <orgId>', description: `Organization (default ${BOOTSTRAP_ORG_ID})` })
  parseOrg(value: string): string {
    return value;
  }
}

@SubCommand({ name: 'list', description: 'List an organization’s upstream credentials (never their values)' })
export class CredentialsListCommand extends CliCommand {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly organizations: OrganizationsService,
  ) {
    super();
  }

  async run(_args: string[], options: { org?: string }): Promise<void> {
    try {
      const orgId = options.org ?? BOOTSTRAP_ORG_ID;
      await this.organizations.get(orgId);
      for (const credential of await this.credentials.list({ orgId, tokenId: CLI_ACTOR })) {
        const target = credential.route ?? `mcp:${credential.mcpServer}`;
        const placement = credential.name === null ? credential.type : `${credential.type}:${credential.name}`;
        const status = credential.revokedAt === null ? 'active' : 'revoked';
        process.stdout.write(`${credential.id}\t${status}\t${target}\t${placement}\tv${credential.version}\t${credential.edge ? 'edge' : 'gateway'}\n`);
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

@SubCommand({ name: 'rotate', arguments: '<credentialId>', description: 'Replace a credential’s secret, read from standard input or a file; in force on every gateway at once' })
export class CredentialsRotateCommand extends CliCommand {
  constructor(private readonly credentials: CredentialsService) {
    super();
  }

  async run([credentialId]: string[], options: { valueFile?: string }): Promise<void> {
    try {
      const orgId = await this.credentials.orgOf(credentialId);
      const value = await readSecret('new credential value', MAX_VALUE_CHARS, options.valueFile);
      printCredential(await this.credentials.rotate({ orgId, tokenId: CLI_ACTOR }, credentialId, { value }));
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: VALUE_FILE_FLAGS, description: VALUE_FILE_HELP })
  parseValueFile(value: string): string {
    return value;
  }

  @Option({ flags: '--value <secret>', description: 'Refused: never give the secret as an argument' })
  parseValue(): never {
    refuseValueOption();
  }
}

@SubCommand({ name: 'delete', aliases: ['revoke'], arguments: '<credentialId>', description: 'Revoke a credential: no longer injected anywhere, its secret erased' })
export class CredentialsDeleteCommand extends CliCommand {
  constructor(private readonly credentials: CredentialsService) {
    super();
  }

  async run([credentialId]: string[]): Promise<void> {
    try {
      const orgId = await this.credentials.orgOf(credentialId);
      printCredential(await this.credentials.revoke({ orgId, tokenId: CLI_ACTOR }, credentialId));
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({
  name: 'credentials',
  description: 'Upstream credentials the gateway adds to the requests it forwards (docs/security.md)',
  subCommands: [CredentialsListCommand, CredentialsCreateCommand, CredentialsRotateCommand, CredentialsDeleteCommand],
})
export class CredentialsCommand extends CommandGroup {}

export const CREDENTIALS_COMMANDS = [CredentialsCommand, CredentialsListCommand, CredentialsCreateCommand, CredentialsRotateCommand, CredentialsDeleteCommand];
