import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PoliciesGitSettings } from '../../core/config/app-config';

/** What a commit holds under the configured path: its policy files and test files, by path. */
export interface CommitFiles {
  commit: string;
  subject: string;
  policyFiles: Map<string, string>;
  testFiles: Map<string, string>;
}

/** A git operation that failed: the repository unreachable, a branch missing, a bad signature. */
export class GitSourceError extends Error {}

const TEST_FILE = /\.test\.ya?ml$/;
const POLICY_FILE = /\.(ya?ml|json)$/;
/** Bounds on what one commit may bring: a repository is read whole at every new commit. */
const MAX_FILES = 200;
const MAX_FILE_BYTES = 1024 * 1024;
const COMMAND_TIMEOUT_MS = 30_000;

/**
 * The policy repository, read with the `git` command into a bare mirror of its own: fetch the
 * branch, verify the tip's signature against an allowed-signers file, read the files of a commit.
 */
export class GitPolicyRepository {
  private readonly mirror = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-policies-git-'));
  private initialized = false;

  constructor(private readonly settings: PoliciesGitSettings) {}

  /** Fetches the branch and answers its tip commit; throws GitSourceError when it cannot. */
  async fetchTip(): Promise<string> {
    if (!this.initialized) {
      await this.git(['init', '--bare', '--quiet', this.mirror], 'cannot create the mirror');
      this.initialized = true;
    }
    const ref = `refs/remotes/source/${this.settings.branch}`;
    await this.git(['fetch', '--quiet', '--no-tags', '--force', this.settings.url, `+refs/heads/${this.settings.branch}:${ref}`], `cannot fetch branch ${this.settings.branch} of ${this.settings.url}`);
    return (await this.git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], `branch ${this.settings.branch} has no commit`)).trim();
  }

  /** Throws GitSourceError unless the commit carries a good signature of an allowed signer (when a signers file is set). */
  async verify(commit: string): Promise<void> {
    const signers = this.settings.allowedSigners;
    if (signers === undefined) return;
    await this.git(['-c', 'gpg.format=ssh', '-c', `gpg.ssh.allowedSignersFile=${signers}`, 'verify-commit', commit], `commit ${commit.slice(0, 12)} is not signed by an allowed signer (POLICIES_GIT_ALLOWED_SIGNERS)`);
  }

  /** The policy and test files of a commit under the configured path. */
  async files(commit: string): Promise<CommitFiles> {
    const scope = this.settings.path === '.' ? [] : ['--', this.settings.path];
    const listed = (await this.git(['ls-tree', '-r', '-z', '--name-only', commit, ...scope], `cannot list commit ${commit.slice(0, 12)}`)).split('\0').filter((name) => POLICY_FILE.test(name));
    if (listed.length > MAX_FILES) throw new GitSourceError(`commit ${commit.slice(0, 12)} holds ${listed.length} policy and test files, more than ${MAX_FILES}`);
    const files: CommitFiles = { commit, subject: (await this.git(['log', '-1', '--format=%s', commit], 'cannot read the commit')).trim(), policyFiles: new Map(), testFiles: new Map() };
    for (const name of listed.sort()) {
      const text = await this.git(['cat-file', 'blob', `${commit}:${name}`], `cannot read ${name}`);
      if (Buffer.byteLength(text) > MAX_FILE_BYTES) throw new GitSourceError(`${name} is larger than ${MAX_FILE_BYTES} bytes`);
      (TEST_FILE.test(name) ? files.testFiles : files.policyFiles).set(name, text);
    }
    return files;
  }

  close(): void {
    fs.rmSync(this.mirror, { recursive: true, force: true });
  }

  private git(args: string[], failure: string): Promise<string> {
    return new Promise((resolve, reject) => {
      // No prompt for credentials (nobody is there to answer), no system or user configuration.
      const env = { PATH: process.env.PATH ?? '', HOME: this.mirror, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' };
      execFile('git', ['-C', this.mirror, ...args], { env, timeout: COMMAND_TIMEOUT_MS, maxBuffer: 4 * MAX_FILE_BYTES }, (error, stdout, stderr) => {
        if (error === null) return resolve(stdout);
        const detail = String(stderr).trim().split('\n').slice(-1)[0] ?? '';
        reject(new GitSourceError(withoutCredentials(detail === '' ? failure : `${failure}: ${detail}`)));
      });
    });
  }
}

/** The text with the user and password of any URL in it masked: a repository URL may carry a token. */
export function withoutCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}
