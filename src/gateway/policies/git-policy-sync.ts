import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { AppConfig, PoliciesGitSettings } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { compilePolicies } from '../../core/policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../../core/policy-engine/errors';
import { loadPolicyFile } from '../../core/policy-engine/loader';
import { loadPolicyTests, runPolicyTests } from '../../core/policy-engine/policy-tests';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../organizations/organizations.service';
import { CommitFiles, GitPolicyRepository, GitSourceError, withoutCredentials } from './git-policy-repository';
import { PoliciesService } from './policies.service';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';

/** Where the git source stands, for /health/ready's details. */
export interface GitSourceStatus {
  url: string;
  branch: string;
  /** The commit whose policies are in force; null before the first good one. */
  commit: string | null;
  appliedAt: string | null;
  checkedAt: string | null;
  /** Why the latest fetch or commit was refused (the last good commit stays in force); null when it was not. */
  error: { commit: string | null; message: string; at: string } | null;
}

/** A fetch that failed (`commit` null) or a commit refused, told once until the reason changes. */
export interface GitSourceRefusal {
  commit: string | null;
  message: string;
  status: GitSourceStatus;
}

/** A commit refused: its policy or test files do not load, or its tests fail. */
class RefusedCommit extends Error {}

/**
 * Keeps an organization's policies (POLICIES_GIT_ORG, the bootstrap organization by default) in step with a git branch (docs/policies.md
 * "Policies from git"): every POLICIES_GIT_POLL_INTERVAL the branch is fetched; a new tip
 * commit, signed by an allowed signer when POLICIES_GIT_ALLOWED_SIGNERS is set, whose policy
 * files load and whose test files pass, becomes a policy version naming it. Anything else keeps
 * the last good commit in force, is shown in /health/ready's details, raises an alert, and is
 * tried again at the next poll.
 */
@Injectable()
export class GitPolicySync implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly settings: PoliciesGitSettings | undefined;
  private readonly repository: GitPolicyRepository | null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** The tip commit last judged (applied or refused): a refused commit is not read again until the branch moves. */
  private judged: string | null = null;
  private state: GitSourceStatus | null;
  private readonly defaultPlan: AppConfig['auth']['defaultPlan'];

  constructor(
    config: AppConfig,
    private readonly policies: PoliciesService,
    private readonly organizations: OrganizationsService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.settings = config.policies.git;
    this.repository = this.settings === undefined ? null : new GitPolicyRepository(this.settings);
    this.state = this.settings === undefined ? null : { url: withoutCredentials(this.settings.url), branch: this.settings.branch, commit: null, appliedAt: null, checkedAt: null, error: null };
    this.defaultPlan = config.auth.defaultPlan;
  }

  private readonly listeners = new Set<(refusal: GitSourceRefusal) => void>();

  /** Hears every new reason the last good commit stays in force (alerting); returns the removal. */
  onRefusal(listener: (refusal: GitSourceRefusal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Null when no repository is configured. */
  get status(): GitSourceStatus | null {
    return this.state === null ? null : { ...this.state };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.settings === undefined) return;
    if (this.settings.orgId === BOOTSTRAP_ORG_ID) await this.organizations.ensureBootstrapOrganization(this.defaultPlan);
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.settings.pollMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.running;
    this.repository?.close();
  }

  /** One fetch and, for a new commit, one judgement; never throws (a failure is recorded and alerted). */
  poll(): Promise<void> {
    this.running ??= this.pollOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async pollOnce(): Promise<void> {
    const state = this.state!;
    let commit: string | null = null;
    try {
      commit = await this.repository!.fetchTip();
      state.checkedAt = new Date().toISOString();
      if (commit === this.judged) {
        if (state.error?.commit === null) state.error = null;
        return;
      }
      this.judged = commit;
      await this.repository!.verify(commit);
      const files = await this.repository!.files(commit);
      const definitions = await judge(files, this.settings!.orgId);
      const version = await this.policies.syncFromGit(this.settings!.orgId, definitions, commit);
      state.commit = commit;
      state.appliedAt = new Date().toISOString();
      state.error = null;
      this.logger.info({ commit, subject: files.subject, policies: definitions.length, version }, version === null ? 'policies from git unchanged' : 'policies from git applied');
    } catch (error) {
      // An organization that does not exist (yet) is a reason like any other: the commit is judged again at the next poll.
      if (error instanceof AppError && error.code === ErrorCode.NotFound) this.judged = null;
      else if (!(error instanceof GitSourceError || error instanceof RefusedCommit)) this.logger.error({ err: error }, 'policies from git: unexpected failure');
      this.refuse(commit, error instanceof Error ? error.message : String(error));
    }
  }

  /** Records why the latest commit (or fetch: `commit` null) was not put in force, and tells the listeners when that is news. */
  private refuse(commit: string | null, message: string): void {
    const state = this.state!;
    const news = state.error === null || state.error.message !== message;
    state.error = { commit, message, at: new Date().toISOString() };
    this.logger.error({ commit, error: message, inForce: state.commit }, 'policies from git: the last good commit stays in force');
    if (news) for (const listener of this.listeners) listener({ commit, message, status: this.status! });
  }
}

/** The policies of a commit, if its files load and its tests pass; throws RefusedCommit saying why not. */
async function judge(files: CommitFiles, orgId: string): Promise<PolicyDefinition[]> {
  const short = files.commit.slice(0, 12);
  const problems: string[] = [];
  const definitions: PolicyDefinition[] = [];
  for (const [name, source] of files.policyFiles) {
    try {
      if (source.trim() !== '') definitions.push(...loadPolicyFile(source, name));
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      problems.push(...error.errors.map(formatPolicyError));
    }
  }
  const suites = [...files.testFiles].flatMap(([name, source]) => {
    try {
      return [loadPolicyTests(source, name)];
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      problems.push(...error.errors.map(formatPolicyError));
      return [];
    }
  });
  if (problems.length === 0) {
    try {
      const set = compilePolicies(definitions, { namespace: orgId, file: short });
      for (const suite of suites) {
        for (const result of await runPolicyTests(suite.tests, set)) {
          if (!result.passed) problems.push(`${suite.file}:${result.test.line}:${result.test.column}: test "${result.test.name}" failed: ${result.failure}`);
        }
      }
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      problems.push(...error.errors.map(formatPolicyError));
    }
  }
  if (problems.length > 0) throw new RefusedCommit(`commit ${short} refused: ${problems.slice(0, 10).join('; ')}${problems.length > 10 ? ` (and ${problems.length - 10} more)` : ''}`);
  return definitions;
}
