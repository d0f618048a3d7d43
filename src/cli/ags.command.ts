import { RootCommand } from 'nest-commander';
import { AgentsCommand } from './agents.command';
import { ApprovalsCommand } from './approvals.command';
import { SessionsCommand } from './sessions.command';
import { CommandGroup } from './cli-command';
import { CredentialsCommand } from './credentials.command';
import { OrgsCommand } from './orgs.command';
import { PoliciesCommand } from './policies.command';

/** `ags`: the command-line tool of the gateway; prints help when run alone. */
@RootCommand({ name: 'ags', description: 'Agent governance service command-line tool', subCommands: [OrgsCommand, AgentsCommand, PoliciesCommand, ApprovalsCommand, SessionsCommand, CredentialsCommand] })
export class AgsCommand extends CommandGroup {}
