import { Module } from '@nestjs/common';
import { RootCommand } from 'nest-commander';
import { ALERTS_COMMANDS } from './alerts.command';
import { CommandGroup } from './cli-command';
import { OfflinePoliciesCommand, PoliciesTestCommand, PoliciesValidateCommand } from './policies.command';

@RootCommand({ name: 'ags', description: 'Agent governance service command-line tool', subCommands: [OfflinePoliciesCommand] })
class OfflineAgsCommand extends CommandGroup {}

/** Commands that need no database (policy files, alerts): they work beside a running embedded gateway. */
@Module({ providers: [OfflineAgsCommand, OfflinePoliciesCommand, PoliciesValidateCommand, PoliciesTestCommand, ...ALERTS_COMMANDS] })
export class OfflineCliModule {}
