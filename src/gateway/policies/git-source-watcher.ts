import type { Logger } from 'pino';
import type { PoliciesGitSettings } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { compilePolicies } from '../../core/policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../../core/policy-engine/errors';
import { loadPolicyFile } from '../../core/policy-engine/loader';
import { loadPolicyTests, runPolicyTests } from '../../core/policy-engine/policy-tests';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import { CommitFiles, GitPolicyRepository, GitSourceError, withoutCredentials } from './git-policy-repository';
import type { PoliciesService } from './policies.service';

/** Where a git source stands: /health/ready's details (POLICIES_GIT_URL), `GET /admin/policy-git` (an organization's own). */
export interface GitSourceStatus {
  orgId: string;
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
 * One organization's policies kept in step with one git branch (docs/policies.md "Policies from
 * git"): every `pollMs` the branch is fetched; a new tip commit, signed by an allowed signer when
 * a signers file is set, whose policy files load and whose test files pass, becomes a policy
 * version naming it. Anything else keeps the last good commit in force, is shown in its status,
 * told to `onRefusal` (alerting), and tried again at the next poll.
 */
export class GitSourceWatcher {
  private readonly repository: GitPolicyRepository;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** The tip commit last judged (applied or refused): a refused commit is not read again until the branch moves. */
  private judged: string | null = null;
  private readonly state: GitSourceStatus;

  constructor(
    readonly settings: PoliciesGitSettings,
    private readonly policies: PoliciesService,
    private readonly logger: Logger,
    private readonly onRefusal: (refusal: GitSourceRefusal) => void,
  ) {
    this.repository = new GitPolicyRepository(settings);
    this.state = { orgId: settings.orgId, url: withoutCredentials(settings.url), branch: settings.branch, commit: null, appliedAt: null, checkedAt: null, error: null };
  }

  get status(): GitSourceStatus {
    return { ...this.state };
  }

  /** Polls now, then every `pollMs`. */
  start(): Promise<void> {
    this.timer = setInterval(() => void this.poll(), this.settings.pollMs);
    this.timer.unref();
    return this.poll();
  }

  /** Stops polling once the poll under way ended; removes the mirror. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    this.repository.close();
  }

  /** One fetch and, for a new commit, one judgement; never throws (a failure is recorded and told). */
  poll(): Promise<void> {
    this.running ??= this.pollOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async pollOnce(): Promise<void> {
    const state = this.state;
    let commit: string | null = null;
    try {
      commit = await this.repository.fetchTip();
      state.checkedAt = new Date().toISOString();
      if (commit === this.judged) {
        if (state.error?.commit === null) state.error = null;
        return;
      }
      this.judged = commit;
      await this.repository.verify(commit);
      const files = await this.repository.files(commit);
      const definitions = await judge(files, this.settings.orgId);
      const version = await this.policies.syncFromGit(this.settings.orgId, definitions, commit);
      state.commit = commit;
      state.appliedAt = new Date().toISOString();
      state.error = null;
      this.logger.info({ orgId: this.settings.orgId, commit, subject: files.subject, policies: definitions.length, version }, version === null ? 'policies from git unchanged' : 'policies from git applied');
    } catch (error) {
      // An organization that does not exist (yet) is a reason like any other: the commit is judged again at the next poll.
      if (error instanceof AppError && error.code === ErrorCode.NotFound) this.judged = null;
      else if (!(error instanceof GitSourceError || error instanceof RefusedCommit)) this.logger.error({ err: error }, 'policies from git: unexpected failure');
      this.refuse(commit, error instanceof Error ? error.message : String(error));
    }
  }

  /** Records why the latest commit (or fetch: `commit` null) was not put in force, and tells the listener when that is news. */
  private refuse(commit: string | null, message: string): void {
    const state = this.state;
    const news = state.error === null || state.error.message !== message;
    state.error = { commit, message, at: new Date().toISOString() };
    this.logger.error({ orgId: this.settings.orgId, commit, error: message, inForce: state.commit }, 'policies from git: the last good commit stays in force');
    if (news) this.onRefusal({ commit, message, status: this.status });
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
