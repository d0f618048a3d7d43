import fs from 'node:fs';
import { parseSidecarLabels, SidecarLabels } from '../core/edge-protocol/sidecar-protocol';
import { Injectable } from '@nestjs/common';
import { Option, SubCommand } from 'nest-commander';
import { AlertDelivery } from '../gateway/alerts/alert-delivery';
import { canaryAlert } from '../gateway/alerts/canary-alerts';
import { AppConfig } from '../core/config/app-config';
import { BOOTSTRAP_ORG_ID } from '../gateway/organizations/organizations.service';
import type { CanaryView } from '../gateway/policies/policies.dto';
import { CanaryStep, PolicyCanariesService } from '../gateway/policies/policy-canaries.service';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields } from './cli-output';

interface OrgOption {
  org?: string;
}

/**
 * A step taken by `ags policy canary` is alerted from the CLI itself (docs/policies.md "Canary
 * rollouts"), as the gateway alerts its own; `run` waits for the delivery before the CLI exits.
 */
// Injectable so that its constructor's parameter types are recorded: the commands below inherit it.
@Injectable()
abstract class CanaryCommand extends CliCommand {
  constructor(
    protected readonly canaries: PolicyCanariesService,
    private readonly config: AppConfig,
  ) {
    super();
  }

  /** Takes a step, and alerts it once delivered. */
  protected async alerting(step: () => Promise<CanaryView>): Promise<CanaryView> {
    const sent: Promise<void>[] = [];
    const unsubscribe = this.canaries.onStep((taken) => sent.push(this.alert(taken)));
    try {
      const canary = await step();
      await Promise.all(sent);
      return canary;
    } finally {
      unsubscribe();
    }
  }

  private async alert(step: CanaryStep): Promise<void> {
    const delivery = AlertDelivery.fromConfig(this.config.alerts, this.config.redis.url, (level, message, fields) => process.stderr.write(`${level}: ${message} ${JSON.stringify(fields)}\n`));
    try {
      if (delivery.providerList.length > 0) await delivery.sendNow(canaryAlert(step));
    } finally {
      await delivery.close();
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization (default: the bootstrap organization)' })
  parseOrg(value: string): string {
    return value;
  }
}

function printCanary(canary: CanaryView): void {
  printFields({
    id: canary.id,
    policy: canary.policy,
    state: canary.state,
    ...(canary.sidecarLabels === null ? { share: `${canary.share}%` } : { sidecars: Object.entries(canary.sidecarLabels).map(([name, value]) => `${name}=${value}`).join(',') }),
    ends: canary.endsAt,
    canary: cohortLine(canary.canary),
    stable: cohortLine(canary.stable),
    ...(canary.outcome === null ? {} : { outcome: canary.outcome }),
  });
}

function cohortLine(cohort: CanaryView['canary']): string {
  return `${cohort.decisions} decisions, ${cohort.denyRate}% denied, ${cohort.approvalRate}% held for approval, ${cohort.errorRate}% errors`;
}

function wholeNumber(flag: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new CliError(`${flag} must be a whole number`);
  return Number(value);
}

@SubCommand({
  name: 'start',
  arguments: '<name>',
  description: 'Put a new version of a policy (--file) in force for --share percent of the agents, or at the sidecars --sidecar-labels selects; rolled back by itself when it denies more than the rest',
})
export class CanaryStartCommand extends CanaryCommand {
  async run([name]: string[], options: OrgOption & { file?: string; share?: number; sidecarLabels?: SidecarLabels; window?: string; margin?: number; minDecisions?: number; force?: boolean }): Promise<void> {
    try {
      if (options.file === undefined) throw new CliError('--file <policy.yaml> is required: the new version of the policy');
      if ((options.share === undefined) === (options.sidecarLabels === undefined)) throw new CliError('give either --share <percent> (1-99) or --sidecar-labels <name=value,…>');
      if (options.share !== undefined && (options.share < 1 || options.share > 99)) throw new CliError('--share must be a whole percentage from 1 to 99');
      let source: string;
      try {
        source = fs.readFileSync(options.file, 'utf8');
      } catch {
        throw new CliError(`cannot read ${options.file}`);
      }
      const target = options.sidecarLabels === undefined ? { share: options.share } : { sidecarLabels: { ...options.sidecarLabels } };
      const request = { policy: name, source, ...target, window: options.window, margin: options.margin, minDecisions: options.minDecisions };
      printCanary(await this.alerting(() => this.canaries.start({ orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' }, request, options.force === true)));
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--file <path>', description: 'The new version of the policy (YAML or JSON)' })
  parseFile(value: string): string {
    return value;
  }

  @Option({ flags: '--share <percent>', description: 'Percent of the agents (1-99) deciding on the new version' })
  parseShare(value: string): number {
    return wholeNumber('--share', value.replace(/%$/, ''));
  }

  @Option({ flags: '--sidecar-labels <labels>', description: 'name=value,… : every agent decides on the new version at the sidecars carrying these labels (SIDECAR_LABELS), on the version in force elsewhere' })
  parseSidecarLabels(value: string): SidecarLabels {
    const parsed = parseSidecarLabels(value);
    if ('problem' in parsed) throw new CliError(`--sidecar-labels: ${parsed.problem}`);
    if (Object.keys(parsed.labels).length === 0) throw new CliError('--sidecar-labels must name at least one label');
    return parsed.labels;
  }

  @Option({ flags: '--window <duration>', description: 'How long the cohorts are compared before the new version is promoted (default 1h)' })
  parseWindow(value: string): string {
    return value;
  }

  @Option({ flags: '--margin <points>', description: 'Percentage points the canary’s deny rate may exceed the rest’s (default 5)' })
  parseMargin(value: string): number {
    const margin = Number(value);
    if (value.trim() === '' || !Number.isFinite(margin) || margin < 0 || margin > 100) throw new CliError('--margin must be a number of percentage points from 0 to 100');
    return margin;
  }

  @Option({ flags: '--min-decisions <count>', description: 'Decisions each cohort needs before the rates are compared ahead of the window’s end (default 20)' })
  parseMinDecisions(value: string): number {
    return wholeNumber('--min-decisions', value);
  }

  @Option({ flags: '--force', description: 'Start although the new version fails stored policy tests (audited)' })
  parseForce(): boolean {
    return true;
  }
}

@SubCommand({ name: 'status', arguments: '[id]', description: 'Show a canary rollout (default: the newest) with both cohorts’ rates' })
export class CanaryStatusCommand extends CanaryCommand {
  async run([id]: string[], options: OrgOption): Promise<void> {
    try {
      const principal = { orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' };
      if (id !== undefined) return printCanary(await this.canaries.get(principal, id));
      const [newest] = (await this.canaries.list(principal)).canaries;
      if (newest === undefined) throw new CliError('the organization has no canary rollout');
      printCanary(newest);
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'promote', arguments: '<id>', description: 'Put a rollout’s new version in force for every agent; refused when stored policy tests fail, unless --force' })
export class CanaryPromoteCommand extends CanaryCommand {
  async run([id]: string[], options: OrgOption & { force?: boolean }): Promise<void> {
    try {
      printCanary(await this.alerting(() => this.canaries.promote({ orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' }, id, options.force === true)));
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--force', description: 'Promote although stored policy tests fail (audited)' })
  parseForce(): boolean {
    return true;
  }
}

@SubCommand({ name: 'abort', arguments: '<id>', description: 'End a rollout: every agent decides on the version in force again' })
export class CanaryAbortCommand extends CanaryCommand {
  async run([id]: string[], options: OrgOption): Promise<void> {
    try {
      printCanary(await this.alerting(() => this.canaries.abort({ orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' }, id)));
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'canary', description: 'Canary rollouts: a new policy version for a share of the agents', subCommands: [CanaryStartCommand, CanaryStatusCommand, CanaryPromoteCommand, CanaryAbortCommand] })
export class CanaryCommandGroup extends CommandGroup {}

export const CANARY_COMMANDS = [CanaryCommandGroup, CanaryStartCommand, CanaryStatusCommand, CanaryPromoteCommand, CanaryAbortCommand];
