import { Option, SubCommand } from 'nest-commander';
import { checkedSessionId } from '../core/decision/session-id';
import { BOOTSTRAP_ORG_ID } from '../gateway/organizations/organizations.service';
import { SessionLabelsService } from '../gateway/sessions/session-labels.service';
import { CliCommand, CommandGroup } from './cli-command';
import { fail, printFields } from './cli-output';

interface ClearOptions {
  org?: string;
  session?: string;
  agentLabels?: boolean;
}

@SubCommand({
  name: 'clear-labels',
  arguments: '<agentId>',
  description: 'End the labels of one session of an agent (--session, else its own scope) or, with --agent-labels, on the agent itself; every gateway instance applies it',
})
export class SessionsClearLabelsCommand extends CliCommand {
  constructor(private readonly labels: SessionLabelsService) {
    super();
  }

  async run([agentId]: string[], options: ClearOptions): Promise<void> {
    try {
      const scope = options.agentLabels === true ? 'agent' : 'session';
      const sessionId = checkedSessionId(options.session, '--session');
      printFields(await this.labels.clear({ orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' }, agentId, scope, sessionId));
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--org <orgId>', description: `Organization (default ${BOOTSTRAP_ORG_ID})` })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--session <sessionId>', description: 'The session whose labels end (default: the agent’s own scope)' })
  parseSession(value: string): string {
    return value;
  }

  @Option({ flags: '--agent-labels', description: 'End the labels on the agent itself (scope: agent rules), in every session' })
  parseAgentLabels(): boolean {
    return true;
  }
}

@SubCommand({ name: 'sessions', description: 'Policy sessions: labels and sequences (docs/policies.md "Sessions")', subCommands: [SessionsClearLabelsCommand] })
export class SessionsCommand extends CommandGroup {}
