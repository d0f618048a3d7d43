import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { AppConfig, PoliciesGitSettings } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../organizations/organizations.service';
import { GitSourceRefusal, GitSourceStatus, GitSourceWatcher } from './git-source-watcher';
import { PoliciesService } from './policies.service';

export type { GitSourceRefusal, GitSourceStatus } from './git-source-watcher';

/** How often every instance reads the organizations' git sources again: one configured through another instance starts here within this long. */
const RECONCILE_MS = 10_000;

/** An organization's git source as the admin API stores it (table `policy_git_sources`). */
export interface StoredGitSource {
  orgId: string;
  url: string;
  branch: string;
  path: string;
  pollMs: number;
  /** The SSH allowed-signers file's text, when commits must be signed. */
  allowedSigners: string | null;
  updatedAt: string;
}

interface SourceRow {
  org_id: string;
  url: string;
  branch: string;
  path: string;
  poll_ms: string | number;
  allowed_signers: string | null;
  updated_at: Date;
}

/**
 * Keeps organizations' policies in step with git branches (docs/policies.md "Policies from
 * git"): the one POLICIES_GIT_URL names (for POLICIES_GIT_ORG), and each organization's source
 * configured through the admin API (`PUT /admin/policy-git`, stored in `policy_git_sources`),
 * one GitSourceWatcher each. Every instance polls every source (a commit already in force
 * changes nothing) and reads the stored sources again every RECONCILE_MS, so a source
 * configured, changed or removed through any instance is followed by all.
 */
@Injectable()
export class GitPolicySync implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly settings: PoliciesGitSettings | undefined;
  private environment: GitSourceWatcher | null = null;
  /** API-configured sources by organization, with the stored row's time they were started from. */
  private readonly stored = new Map<string, { watcher: GitSourceWatcher; updatedAt: string; signersDir: string | null }>();
  private readonly listeners = new Set<(refusal: GitSourceRefusal) => void>();
  private readonly defaultPlan: AppConfig['auth']['defaultPlan'];
  private reconciler: NodeJS.Timeout | null = null;
  private reconciling: Promise<void> | null = null;
  private stopped = false;

  constructor(
    config: AppConfig,
    private readonly policies: PoliciesService,
    private readonly organizations: OrganizationsService,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.settings = config.policies.git;
    this.defaultPlan = config.auth.defaultPlan;
  }

  /** Hears every new reason a last good commit stays in force (alerting); returns the removal. */
  onRefusal(listener: (refusal: GitSourceRefusal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The POLICIES_GIT_URL source's status; null when none is configured. */
  get status(): GitSourceStatus | null {
    return this.environment?.status ?? null;
  }

  /** The organization POLICIES_GIT_URL keeps in git, if any: the admin API cannot configure another source for it. */
  get environmentOrg(): string | null {
    return this.settings?.orgId ?? null;
  }

  /** The status of an organization's API-configured source in this process; null when it follows none (yet). */
  statusOf(orgId: string): GitSourceStatus | null {
    return this.stored.get(orgId)?.watcher.status ?? null;
  }

  /** The API-configured sources followed in this process, and how many of them keep an older commit in force because the latest was refused. */
  storedSummary(): { sources: number; failing: number } {
    const statuses = [...this.stored.values()].map(({ watcher }) => watcher.status);
    return { sources: statuses.length, failing: statuses.filter((status) => status.error !== null).length };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.settings !== undefined) {
      if (this.settings.orgId === BOOTSTRAP_ORG_ID) await this.organizations.ensureBootstrapOrganization(this.defaultPlan);
      this.environment = new GitSourceWatcher(this.settings, this.policies, this.logger, (refusal) => this.tell(refusal));
      await this.environment.start();
    }
    await this.reconcile();
    this.reconciler = setInterval(() => void this.reconcile(), RECONCILE_MS);
    this.reconciler.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.reconciler !== null) clearInterval(this.reconciler);
    await this.reconciling;
    await this.environment?.stop();
    await Promise.all([...this.stored.keys()].map((orgId) => this.stopStored(orgId)));
  }

  /** Follows the stored sources as they are now: starts new ones, restarts changed ones, stops removed ones; resolves after their first poll. */
  reconcile(): Promise<void> {
    this.reconciling ??= this.reconcileOnce()
      .catch((error: unknown) => this.logger.error({ err: error }, 'policies from git: the organizations’ sources could not be read; read again at the next interval'))
      .finally(() => (this.reconciling = null));
    return this.reconciling;
  }

  private async reconcileOnce(): Promise<void> {
    if (this.stopped) return;
    const rows: SourceRow[] = await this.dataSource.query('SELECT org_id, url, branch, path, poll_ms, allowed_signers, updated_at FROM policy_git_sources');
    const sources = new Map(rows.map((row) => [row.org_id, storedOf(row)]));
    for (const orgId of [...this.stored.keys()]) {
      const source = sources.get(orgId);
      if (source === undefined || source.updatedAt !== this.stored.get(orgId)!.updatedAt) await this.stopStored(orgId);
    }
    const started: Array<Promise<void>> = [];
    for (const source of sources.values()) {
      if (this.stored.has(source.orgId) || source.orgId === this.settings?.orgId) continue;
      started.push(this.startStored(source));
    }
    await Promise.all(started);
  }

  private async startStored(source: StoredGitSource): Promise<void> {
    let signersDir: string | null = null;
    let allowedSigners: string | undefined;
    if (source.allowedSigners !== null) {
      // git reads allowed signers from a file: the stored text is written to one of this source's own.
      signersDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-allowed-signers-'));
      allowedSigners = path.join(signersDir, 'allowed_signers');
      fs.writeFileSync(allowedSigners, source.allowedSigners, { mode: 0o600 });
    }
    const settings: PoliciesGitSettings = { orgId: source.orgId, url: source.url, branch: source.branch, path: source.path, pollMs: source.pollMs, ...(allowedSigners === undefined ? {} : { allowedSigners }) };
    const watcher = new GitSourceWatcher(settings, this.policies, this.logger, (refusal) => this.tell(refusal));
    this.stored.set(source.orgId, { watcher, updatedAt: source.updatedAt, signersDir });
    await watcher.start();
  }

  private async stopStored(orgId: string): Promise<void> {
    const entry = this.stored.get(orgId);
    if (entry === undefined) return;
    this.stored.delete(orgId);
    await entry.watcher.stop();
    if (entry.signersDir !== null) fs.rmSync(entry.signersDir, { recursive: true, force: true });
  }

  private tell(refusal: GitSourceRefusal): void {
    for (const listener of this.listeners) listener(refusal);
  }
}

function storedOf(row: SourceRow): StoredGitSource {
  return { orgId: row.org_id, url: row.url, branch: row.branch, path: row.path, pollMs: Number(row.poll_ms), allowedSigners: row.allowed_signers, updatedAt: new Date(row.updated_at).toISOString() };
}
