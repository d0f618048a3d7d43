import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import fs from 'node:fs/promises';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { formatPolicyError, PolicyLoadError } from '../../core/policy-engine/errors';
import { loadPolicyFile } from '../../core/policy-engine/loader';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../organizations/organizations.service';
import { PoliciesService } from './policies.service';

/**
 * Loads POLICIES_FILE into the bootstrap organization at start (an invalid file stops the start,
 * naming every error) and again on SIGHUP (an invalid file is reported and the current
 * policies stay in force).
 */
@Injectable()
export class PolicyFileLoader implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly onHangup = () => void this.reload();

  constructor(
    private readonly config: AppConfig,
    private readonly policies: PoliciesService,
    private readonly organizations: OrganizationsService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // A git repository, when configured, is where the bootstrap organization's policies come from instead.
    if (this.config.policies.git !== undefined) return;
    await this.organizations.ensureBootstrapOrganization(this.config.auth.defaultPlan);
    await this.load();
    process.on('SIGHUP', this.onHangup);
  }

  onApplicationShutdown(): void {
    process.off('SIGHUP', this.onHangup);
  }

  /** Loads the file now; throws PolicyLoadError when it is invalid. */
  async load(): Promise<number | null> {
    const definitions = await this.read();
    const version = await this.policies.syncFromFile(BOOTSTRAP_ORG_ID, definitions);
    this.logger.info({ file: this.config.policies.file, policies: definitions.length, version }, version === null ? 'policies file unchanged' : 'policies file loaded');
    return version;
  }

  private async reload(): Promise<void> {
    try {
      await this.load();
    } catch (error) {
      const errors = error instanceof PolicyLoadError ? error.errors.map(formatPolicyError) : [String(error)];
      this.logger.error({ file: this.config.policies.file, errors }, 'policies file not reloaded; the current policies stay in force');
    }
  }

  private async read(): Promise<PolicyDefinition[]> {
    const source = await fs.readFile(this.config.policies.file, 'utf8');
    return source.trim() === '' ? [] : loadPolicyFile(source, this.config.policies.file);
  }
}
